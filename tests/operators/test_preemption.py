"""Sync mode renews the lease while the pod runs; a renewal that finds the step preempted stops it."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest

from tests.operators.placement_fleet import active_reservations, hold_capacity, placement_rows

L4_NODE = {"kind": "batch", "gpus": 4, "gpu_types": ["NVIDIA-L4"], "cpu": 1, "memory_gib": 2}


def submit_critical_once_running(dag_id: str) -> threading.Thread:
    """Critical work for an L4 node arrives while the step runs: the engine picks the step as victim."""
    from airflow.utils.session import create_session

    from airflow_mcsched.service.placement_store import PlacementStore
    from airflow_mcsched.service.policy_source import current_policy
    from airflow_mcsched.service.schemas import PlacementSubmit, ResourceAsk, TaskRef

    def run() -> None:
        deadline = time.monotonic() + 60
        while not any(r.state == "running" for r in placement_rows(dag_id)):
            if time.monotonic() > deadline:
                return
            time.sleep(0.1)
        now = datetime.now(UTC)
        with create_session() as session:
            store = PlacementStore(session, current_policy())
            task = TaskRef(dag_id="incident_response", run_id="run", task_id="rollback_model")
            ask = ResourceAsk(team="ops", priority_class="critical", **L4_NODE)
            store.submit(PlacementSubmit(task=task, ask=ask), "tests", now)
            store.run_cycle(now)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
def test_a_preempted_step_stops_its_pod_fails_the_try_and_frees_the_node_for_critical_work(placement_fleet):
    dag_id = "mcsched_preempted_sweep"
    hold_capacity(L4_NODE)  # one L4 node is busy with work that cannot be interrupted
    submit_critical_once_running(dag_id)

    log = placement_fleet.run_logged("mcsched_preemptible_step.py", dag_id)

    assert "DAG RUN STATE: failed" in log
    # the pod was stopped, not waited for: its 300 trials never all ran (a busy machine only makes
    # the run slower, never this false; a clock limit here failed CI at 25.4 s)
    assert "hyper-parameter trial 0" in log and "hyper-parameter trial 299" not in log
    assert "was preempted: PreemptedByPriority" in log and "stopping its pod" in log
    assert "the step was preempted and its pod stopped: PreemptedByPriority" in log  # the task's error
    (row,) = placement_rows(dag_id)
    assert row.state == "preempted" and "PreemptedByPriority" in row.end_reason
    assert row.ended_at and row.gpu_hours > 0
    (critical,) = placement_rows("incident_response")
    assert (critical.state, critical.cluster, critical.pool) == ("admitted", row.cluster, row.pool)
    assert {r.placement_id for r in active_reservations()} >= {critical.id}
    assert placement_fleet.fleet.cluster("cloud-h100").summary()["pods"].get("Running", 0) == 0
