"""Tasks of a real DAG run reach the placement service with their own signed tokens (dag.test)."""

from __future__ import annotations

import importlib.util
import shutil
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select

from airflow_mcsched.access.fleet_file import load_fleet_file
from airflow_mcsched.service.cluster_store import ClusterStore
from airflow_mcsched.service.status_store import StatusStore
from airflow_mcsched.service.tables import AuditRow, PlacementRow
from tests.decision.fleet_factory import observe

DAG_FILE = Path(__file__).parent / "dags" / "mcsched_hook_probe.py"
FLEET = load_fleet_file(Path(__file__).resolve().parents[2] / "examples" / "fleet.yaml")


def test_a_task_acts_on_its_own_placement_and_may_not_release_another_tasks(live_api_url, airflow_home):
    from airflow.utils.session import create_session

    with create_session() as s:
        ClusterStore(s).apply(FLEET, "test")
        for profile in FLEET.clusters:
            StatusStore(s).record(observe(profile, at=datetime.now(UTC)))
    target = airflow_home / "dags" / DAG_FILE.name
    shutil.copy(DAG_FILE, target)
    spec = importlib.util.spec_from_file_location("mcsched_hook_probe", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    run = module.dag.test()

    assert run.state == "success"
    with create_session() as s:
        row = s.scalars(select(PlacementRow).where(PlacementRow.dag_id == "mcsched_hook_probe")).one()
        actions = [
            (a.actor.split("/")[2] if a.actor.startswith("task:") else a.actor, a.action)
            for a in s.scalars(select(AuditRow).where(AuditRow.subject == row.id).order_by(AuditRow.id))
        ]
    assert row.state == "released" and row.team == "probe" and row.ti_id
    assert actions == [("owner", "placement.submit"), ("admission", "placement.admit"), ("owner", "placement.released")]
