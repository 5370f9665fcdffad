"""GPU-hours and cost per group (team, project, DAG, cluster, node pool, GPU type) over a window.

Cost = GPU-hours x the price per GPU-hour recorded on the placement (the pool's price, or its
spot price for interruptible work). A placement that overlaps the window counts only for the
part of its run inside it; one still running counts up to `until` or `now`, whichever is first,
at its price. `placements` counts the placements that ran at all inside the window.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from airflow_mcsched.governance.usage import GroupKey, PlacementUsage
from airflow_mcsched.governance.window import ReportParamError, TimeWindow

DIGITS = 6
"""Figures are rounded to 6 decimals (a micro-dollar): exact enough, and identical in JSON and CSV."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class CostLine(_Frozen):
    """One group's totals; `group` holds the values of the report's `group_by` keys, in order."""

    group: tuple[str, ...]
    gpu_hours: float
    cost: float
    placements: int


class CostReport(_Frozen):
    since: datetime
    until: datetime
    group_by: tuple[GroupKey, ...]
    lines: tuple[CostLine, ...]
    gpu_hours: float
    cost: float

    def rows(self) -> list[dict[str, str | float | int]]:
        """Flat rows as the API and CSV show them: the group keys, then gpu_hours, cost, placements."""
        return [
            {
                **dict(zip(self.group_by, line.group, strict=True)),
                "gpu_hours": line.gpu_hours,
                "cost": line.cost,
                "placements": line.placements,
            }
            for line in self.lines
        ]

    @property
    def columns(self) -> list[str]:
        return [*self.group_by, "gpu_hours", "cost", "placements"]


def cost_report(
    usages: Iterable[PlacementUsage], window: TimeWindow, group_by: tuple[GroupKey, ...], now: datetime
) -> CostReport:
    """Totals per group, largest cost first (ties by group), with the grand total."""
    totals: dict[tuple[str, ...], list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for u in usages:
        hours = u.gpu_hours_in(window, now)
        if hours <= 0.0:
            continue
        t = totals[u.group(group_by)]
        t[0] += hours
        t[1] += hours * (u.price_per_gpu_hour or 0.0)
        t[2] += 1
    lines = sorted(
        (CostLine(group=g, gpu_hours=round(h, DIGITS), cost=round(c, DIGITS), placements=int(n))
         for g, (h, c, n) in totals.items()),
        key=lambda line: (-line.cost, line.group),
    )  # fmt: skip
    return CostReport(
        since=window.since,
        until=window.until,
        group_by=group_by,
        lines=tuple(lines),
        gpu_hours=round(sum(t[0] for t in totals.values()), DIGITS),
        cost=round(sum(t[1] for t in totals.values()), DIGITS),
    )


def top_spenders(
    usages: Iterable[PlacementUsage], window: TimeWindow, by: GroupKey, n: int, now: datetime
) -> CostReport:
    """The `n` groups (teams, projects, ...) that cost most in the window."""
    if n < 1:
        raise ReportParamError("n", f"{n} is not a count; ask for 1 or more")
    report = cost_report(usages, window, (by,), now)
    return report.model_copy(update={"lines": report.lines[:n]})


Measure = Literal["cost", "gpu_hours"]


class Series(_Frozen):
    key: str
    values: tuple[float, ...]


class CostSeries(_Frozen):
    """Per group, one value per bucket (a UTC day), for charts and the forecast."""

    since: datetime
    until: datetime
    group_by: tuple[GroupKey, ...]
    measure: Measure
    buckets: tuple[date, ...]
    series: tuple[Series, ...]


KEY_SEPARATOR = "/"


def daily_series(
    usages: Iterable[PlacementUsage],
    window: TimeWindow,
    group_by: tuple[GroupKey, ...],
    now: datetime,
    measure: Measure = "cost",
) -> CostSeries:
    """Cost (or GPU-hours) per group and UTC day; several keys join as `team-a/proj-x`.

    Each day is clipped to the window, so the values of a group add up to its `cost_report` line."""
    days = list(window.days())
    index = {d: i for i, (d, _) in enumerate(days)}
    values: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(days))
    for u in usages:
        if not u.ran_in(window, now):
            continue
        row = values[KEY_SEPARATOR.join(u.group(group_by))]
        first = index.get(u.started_at.date(), 0) if u.started_at else 0  # skip the days before it ran
        for day, part in days[first:]:
            hours = u.gpu_hours_in(part, now)
            if hours > 0.0:
                row[index[day]] += hours * (u.price_per_gpu_hour or 0.0) if measure == "cost" else hours
    return CostSeries(
        since=window.since,
        until=window.until,
        group_by=group_by,
        measure=measure,
        buckets=tuple(d for d, _ in days),
        series=tuple(Series(key=k, values=tuple(round(v, DIGITS) for v in vs)) for k, vs in sorted(values.items())),
    )
