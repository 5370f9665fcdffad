"""Daily GPU cost per team, project and cluster, as a CSV under $AIRFLOW_HOME/reports.

The task asks the placement service for the cost report of the day before the run's data interval
end (`GET /mcsched/api/v1/reports/cost?format=csv`), signed with its own short-lived task token as
every mcsched operator is, and writes the CSV as it comes: columns team, project, cluster,
gpu_hours, cost, placements. Placements that overlap the day count for the part that ran in it.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

from airflow.sdk import DAG, task

GROUP_BY = "team,project,cluster"


def report_path(end: datetime) -> Path:
    home = Path(os.environ.get("AIRFLOW_HOME", Path.home() / "airflow"))
    return home / "reports" / f"gpu-cost-{end:%Y-%m-%d}.csv"


@task
def gpu_cost_report(data_interval_end=None, **context) -> str:
    from airflow_mcsched.hooks.placement import PlacementHook, task_identity

    end = data_interval_end
    hook = PlacementHook(task_identity(context))
    csv_text = hook.cost_csv(since=(end - timedelta(days=1)).isoformat(), until=end.isoformat(), group_by=GROUP_BY)
    path = report_path(end)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(csv_text)
    print(f"wrote {len(csv_text.splitlines()) - 1} rows to {path}")
    return str(path)


with DAG(
    dag_id="cost_report",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["governance"],
) as dag:
    gpu_cost_report()
