"""A live placement service over the example fleet of virtual clusters, and real DAG runs against it.

Shared by the operator, sensor and trigger tests (their conftests import the fixture). Each test
gets fresh clusters, their profiles and freshly synced capacity in the metadata DB, and an empty
placement queue, so no test sees another's reservations.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, select

from airflow_mcsched.access.fleet_file import load_fleet_file
from airflow_mcsched.access.profiles import FleetSpec
from airflow_mcsched.virtual.fleet import VirtualFleet
from airflow_mcsched.virtual.options import VirtualClusterOptions

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_FLEET = REPO / "examples" / "fleet.yaml"
TEST_DAGS = Path(__file__).parent / "dags"
FAST = VirtualClusterOptions(default_duration_seconds=0.2, container_start_seconds=0.02)
SYNC_OWNER = "mcsched-operator-tests"


def empty_placement_queue() -> None:
    from airflow.utils.session import create_session

    from airflow_mcsched.service.tables import PlacementRow, ReservationRow

    with create_session() as session:
        session.execute(delete(ReservationRow))
        session.execute(delete(PlacementRow))


def sync_capacity() -> None:
    """One capacity read of every cluster into the metadata DB, as the API server's sync does."""
    from airflow.utils.session import create_session

    from airflow_mcsched.access.connections import ConnectionClients
    from airflow_mcsched.access.sync import CapacitySync
    from airflow_mcsched.service.sync_ledger import DbSyncLedger

    outcomes = CapacitySync(DbSyncLedger(create_session), ConnectionClients(), owner=SYNC_OWNER).sync_once()
    assert all(o.synced for o in outcomes), outcomes


def placement_rows(dag_id: str) -> list[Any]:
    """Every placement attempt of a DAG (lineage rows), oldest first."""
    from airflow.utils.session import create_session

    from airflow_mcsched.service.tables import PlacementRow

    with create_session() as session:
        rows = session.scalars(
            select(PlacementRow).where(PlacementRow.dag_id == dag_id).order_by(PlacementRow.queued_at)
        ).all()
        session.expunge_all()
        return list(rows)


def active_reservations() -> list[Any]:
    from airflow.utils.session import create_session

    from airflow_mcsched.service.tables import ReservationRow

    with create_session() as session:
        rows = session.scalars(select(ReservationRow).where(ReservationRow.active.is_(True))).all()
        session.expunge_all()
        return list(rows)


def hold_capacity(*asks: dict[str, Any]) -> list[str]:
    """Grant reservations to another team's work (their pods never show), to make a step wait."""
    from airflow.utils.session import create_session

    from airflow_mcsched.service.placement_store import PlacementStore
    from airflow_mcsched.service.policy_source import current_policy
    from airflow_mcsched.service.schemas import PlacementState, PlacementSubmit, ResourceAsk, TaskRef

    now = datetime.now(UTC)
    with create_session() as session:
        store = PlacementStore(session, current_policy())
        rows = [
            store.submit(
                PlacementSubmit(
                    task=TaskRef(dag_id="other_team_dag", run_id="run", task_id=f"hold_{i}"),
                    ask=ResourceAsk(team="other-team", **ask),
                ),
                "tests",
                now,
            )
            for i, ask in enumerate(asks)
        ]
        store.run_cycle(now)
        assert all(r.state == PlacementState.ADMITTED.value for r in rows), [r.explanation for r in rows]
        return [r.id for r in rows]


def release_placement(placement_id: str) -> None:
    from airflow.utils.session import create_session

    from airflow_mcsched.service.placement_store import PlacementStore
    from airflow_mcsched.service.policy_source import current_policy

    now = datetime.now(UTC)
    with create_session() as session:
        store = PlacementStore(session, current_policy())
        store.release(placement_id, "succeeded", "", now, "tests")
        store.run_cycle(now)


def release_once(condition: Callable[[], bool], placement_id: str, timeout: float = 60.0) -> threading.Thread:
    """In the background: once `condition()` holds (e.g. the step under test is queued), free a hold."""

    def wait_then_release() -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return
            time.sleep(0.1)
        release_placement(placement_id)

    thread = threading.Thread(target=wait_then_release, name="release-once", daemon=True)
    thread.start()
    return thread


def is_queued(dag_id: str, task_id: str) -> Callable[[], bool]:
    """True once the task has a placement waiting in the queue."""
    return lambda: any(r.task_id == task_id and r.state == "pending" for r in placement_rows(dag_id))


RUN_DAG = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location(sys.argv[2], sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print("DAG RUN STATE:", module.dag.test().state)
"""


def run_dag(source: Path, dag_id: str, dags_folder: Path, **test_kwargs: Any) -> Any:
    """Copy a DAG file into the dags folder under `dag_id` (its file stem) and run it with dag.test()."""
    target = dags_folder / f"{dag_id}.py"  # dag.test() needs the DAG inside the dags folder
    shutil.copy(source, target)
    spec = importlib.util.spec_from_file_location(dag_id, target)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag.test(**test_kwargs)


@dataclass
class PlacementFleet:
    fleet: VirtualFleet
    spec: FleetSpec
    dags_folder: Path

    def run(self, source: Path | str, dag_id: str, **test_kwargs: Any) -> Any:
        """Run in this process (fast; task logs stay at WARNING)."""
        path = source if isinstance(source, Path) else TEST_DAGS / source
        return run_dag(path, dag_id, self.dags_folder, **test_kwargs)

    def run_logged(self, source: Path | str, dag_id: str) -> str:
        """Run in a fresh process with task logs at INFO (Airflow fixes its log level once per
        process); returns the output, which ends with the run's state. The output is written to
        `output_file(dag_id)` as it comes, so a test can act on what the run has said so far."""
        path = source if isinstance(source, Path) else TEST_DAGS / source
        target = self.dags_folder / f"{dag_id}.py"
        shutil.copy(path, target)
        env = {**os.environ, "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO", "PYTHONUNBUFFERED": "1"}
        output = self.output_file(dag_id)
        with output.open("w") as out:
            subprocess.run(
                [sys.executable, "-c", RUN_DAG, str(target), dag_id],
                env=env, stdout=out, stderr=subprocess.STDOUT, timeout=240,
            )  # fmt: skip
        return output.read_text()

    def output_file(self, dag_id: str) -> Path:
        return self.dags_folder.parent / f"{dag_id}.out"

    def has_logged(self, dag_id: str, text: str) -> Callable[[], bool]:
        """True once `run_logged(..., dag_id)` has printed `text` (a step's own word that it saw
        something, where the DB alone would race with what the step was told). An earlier run's
        output is removed first, so it cannot hold before this run has said it."""
        output = self.output_file(dag_id)
        output.unlink(missing_ok=True)
        return lambda: output.exists() and text in output.read_text()

    def pool(self, cluster: str, pool: str):
        profile = next(c for c in self.spec.clusters if c.name == cluster)
        return next(p for p in profile.node_pools if p.name == pool)


@pytest.fixture
def placement_fleet(live_api_url: str, airflow_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PlacementFleet]:
    """The example fleet running, registered and synced; the placement service live over HTTP."""
    from airflow.utils.session import create_session

    from airflow_mcsched.service.cluster_store import ClusterStore

    spec = load_fleet_file(EXAMPLE_FLEET)
    empty_placement_queue()
    with VirtualFleet.start(spec, options=FAST) as fleet:
        for name, value in fleet.connection_env().items():
            monkeypatch.setenv(name, value)
        with create_session() as session:
            ClusterStore(session).apply(spec, "tests")
        sync_capacity()
        yield PlacementFleet(fleet, spec, airflow_home / "dags")
