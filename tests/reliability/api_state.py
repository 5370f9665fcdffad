"""What the bad-input tests share: the state of our tables, to prove a refused request wrote nothing,
and a small fleet with one queued placement, so requests reach the code behind the lookups."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airflow_mcsched.access.fleet_file import load_fleet_file
from airflow_mcsched.service.cluster_store import ClusterStore
from airflow_mcsched.service.status_store import StatusStore
from tests.decision.fleet_factory import observe

API = "/mcsched/api/v1"
EXAMPLE_FLEET = Path(__file__).resolve().parents[2] / "examples" / "fleet.yaml"


def row_counts() -> dict[str, int]:
    """Rows per table of ours (through Airflow's own session, as the API sees them)."""
    from airflow.utils.session import create_session
    from sqlalchemy import func, select

    from airflow_mcsched.service.tables import metadata

    with create_session() as session:
        count = select(func.count())
        return {t.name: session.execute(count.select_from(t)).scalar_one() for t in metadata.sorted_tables}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def valid_submit(task_id: str = "train", **ask: Any) -> dict[str, Any]:
    """A placement body the service accepts; tests change one field to make it bad."""
    return {
        "task": {"dag_id": "fuzz_dag", "run_id": "manual__1", "task_id": task_id},
        "ask": {"team": "ml", "kind": "training", "gpus": 1, **ask},
    }


def seed_fleet_and_placement(api_client, token: str) -> str:
    """The example fleet's profiles, a fresh read of each (all free), and one placement submitted
    through the API; returns its id."""
    from airflow.utils.session import create_session

    fleet = load_fleet_file(EXAMPLE_FLEET)
    with create_session() as session:
        ClusterStore(session).apply(fleet, "test")
        for profile in fleet.clusters:
            StatusStore(session).record(observe(profile, at=datetime.now(UTC)))
    r = api_client.post(f"{API}/placements", json=valid_submit("seeded"), headers=bearer(token))
    assert r.status_code == 201, r.text
    return r.json()["id"]
