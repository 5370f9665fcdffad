"""Reports as documents: the JSON the API returns and the CSV it exports, one definition for both.

The CSV has the same rows as the JSON (header = the group keys, then gpu_hours, cost, placements),
so a CSV parsed back equals the JSON rows once numbers are read as numbers.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from airflow_mcsched.governance.cost import CostReport, CostSeries


def cost_document(report: CostReport) -> dict[str, Any]:
    placements = sum(line.placements for line in report.lines)
    return {
        "since": report.since.isoformat(),
        "until": report.until.isoformat(),
        "group_by": list(report.group_by),
        "rows": report.rows(),
        "total": {"gpu_hours": report.gpu_hours, "cost": report.cost, "placements": placements},
    }


def series_document(series: CostSeries) -> dict[str, Any]:
    return {
        "since": series.since.isoformat(),
        "until": series.until.isoformat(),
        "group_by": list(series.group_by),
        "measure": series.measure,
        "buckets": [d.isoformat() for d in series.buckets],
        "series": [{"key": s.key, "values": list(s.values)} for s in series.series],
    }


def to_csv(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def cost_csv(report: CostReport) -> str:
    return to_csv(report.columns, report.rows())


def parse_cost_csv(text: str) -> list[dict[str, str | float | int]]:
    """The rows of a cost CSV with gpu_hours and cost as floats and placements as an int."""
    rows: list[dict[str, str | float | int]] = []
    for raw in csv.DictReader(io.StringIO(text)):
        row: dict[str, str | float | int] = dict(raw)
        row["gpu_hours"], row["cost"] = float(raw["gpu_hours"]), float(raw["cost"])
        row["placements"] = int(raw["placements"])
        rows.append(row)
    return rows
