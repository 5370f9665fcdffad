"""The daily cost report adds up the lineage of the placements that ended in its day."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta

import pytest

from tests.operators.placement_fleet import REPO

EXAMPLE = REPO / "dags_examples" / "cost_report.py"
NOW = datetime.now(UTC).replace(microsecond=0)


def ran(team: str, project: str | None, gpu_type: str, gpus: int, hours: float, ended_ago: timedelta) -> float:
    """A step that ran `hours` on `gpus` GPUs and ended `ended_ago`; returns its cost."""
    from airflow.utils.session import create_session

    from airflow_mcsched.service.placement_store import PlacementStore
    from airflow_mcsched.service.policy_source import current_policy
    from airflow_mcsched.service.schemas import PlacementSubmit, ResourceAsk, TaskRef

    end = NOW - ended_ago
    start = end - timedelta(hours=hours)
    with create_session() as session:
        store = PlacementStore(session, current_policy())
        task = TaskRef(dag_id="billed_dag", run_id=f"{team}-{project}-{ended_ago}", task_id="step")
        ask = ResourceAsk(team=team, project=project, gpus=gpus, gpu_types=[gpu_type], cpu=1, memory_gib=1)
        row = store.submit(PlacementSubmit(task=task, ask=ask), "tests", start)
        store.run_cycle(start)
        store.start(row.id, "pod", start)
        store.release(row.id, "succeeded", "", end, "tests")
        return row.cost


@pytest.mark.slow
def test_the_report_sums_gpu_hours_and_cost_per_team_project_and_cluster(placement_fleet, airflow_home):
    a = ran("recsys", "ranker", "NVIDIA-A100-SXM4-80GB", 8, 2.0, timedelta(hours=3))
    b = ran("recsys", "ranker", "NVIDIA-A100-SXM4-80GB", 4, 1.0, timedelta(hours=1))
    c = ran("vision", None, "Tesla-T4", 1, 0.5, timedelta(hours=2))
    ran("vision", None, "Tesla-T4", 1, 0.5, timedelta(days=2))  # ended before the report's day

    run = placement_fleet.run(EXAMPLE, "cost_report", logical_date=NOW)

    assert run.state == "success"
    with (airflow_home / "reports" / f"gpu-cost-{NOW:%Y-%m-%d}.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["team"], r["project"], r["cluster"], r["placements"]) for r in rows] == [
        ("recsys", "ranker", "onprem-a100", "2"),
        ("vision", "", "baremetal-t4", "1"),
    ]
    assert float(rows[0]["gpu_hours"]) == pytest.approx(8 * 2.0 + 4 * 1.0)
    assert float(rows[0]["cost"]) == pytest.approx(a + b) and a + b == pytest.approx(20 * 1.20)
    assert float(rows[1]["cost"]) == pytest.approx(c) and c == pytest.approx(0.5 * 0.35)
