"""Daily GPU cost per team, project and cluster, as a CSV under $AIRFLOW_HOME/reports.

Reads the placement lineage from the placement service (every attempt of every step, with its
GPU-hours and cost) and adds up the placements that ended in the 24 hours before the run.
"""

from __future__ import annotations

import csv
import os
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path

from airflow.sdk import DAG, task

REPORT_COLUMNS = ["team", "project", "cluster", "placements", "gpu_hours", "cost"]
COSTED_STATES = ("released", "preempted", "expired", "failed")
PAGE_LIMIT = 5000


def cost_rows(placements: Iterable, start: datetime, end: datetime) -> list[dict]:
    """One row per (team, project, cluster): placements ended in [start, end), GPU-hours, cost."""
    totals: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for p in placements:
        if p.ended_at is None or not start <= p.ended_at < end:
            continue
        total = totals[(p.team, p.project or "", p.cluster or "")]
        total[0] += 1
        total[1] += p.gpu_hours or 0.0
        total[2] += p.cost or 0.0
    return [
        {"team": team, "project": project, "cluster": cluster, "placements": int(n),
         "gpu_hours": round(hours, 6), "cost": round(cost, 6)}
        for (team, project, cluster), (n, hours, cost) in sorted(totals.items())
    ]  # fmt: skip


def write_csv(rows: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=REPORT_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


@task
def gpu_cost_report(data_interval_end=None, **context) -> str:
    from airflow_mcsched.hooks.placement import PlacementHook, task_identity

    hook = PlacementHook(task_identity(context))
    placements = []
    for state in COSTED_STATES:
        page = hook.list(state=state, limit=PAGE_LIMIT).placements
        if len(page) == PAGE_LIMIT:
            print(f"warning: {PAGE_LIMIT} {state} placements returned; older ones may be missing")
        placements.extend(page)
    end = data_interval_end
    rows = cost_rows(placements, end - timedelta(days=1), end)
    home = Path(os.environ.get("AIRFLOW_HOME", Path.home() / "airflow"))
    path = write_csv(rows, home / "reports" / f"gpu-cost-{end:%Y-%m-%d}.csv")
    print(f"wrote {len(rows)} rows to {path}")
    return str(path)


with DAG(
    dag_id="cost_report",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["governance"],
) as dag:
    gpu_cost_report()
