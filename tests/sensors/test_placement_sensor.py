"""PlacementSensor: wait for capacity, then hand the reservation to the step that uses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.operators.placement_fleet import active_reservations, hold_capacity, is_queued, placement_rows, release_once

DAGS = Path(__file__).parent / "dags"
L4_NODE = {"kind": "batch", "gpus": 4, "gpu_types": ["NVIDIA-L4"], "cpu": 1, "memory_gib": 2}


def xcom(dag_id: str, task_id: str, key: str = "return_value"):
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        return session.scalars(
            select(XComModel.value).where(
                XComModel.dag_id == dag_id, XComModel.task_id == task_id, XComModel.key == key
            )
        ).one()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["deferrable", "poke"])
def test_the_sensor_waits_then_the_downstream_step_runs_on_its_reservation(placement_fleet, mode):
    dag_id = f"mcsched_sensor_{mode}"
    first_hold, second_hold = hold_capacity(L4_NODE, L4_NODE)
    release_once(is_queued(dag_id, "wait_for_gpus"), first_hold)

    run = placement_fleet.run(DAGS / "mcsched_sensor_then_step.py", dag_id)

    assert run.state == "success"
    (row,) = placement_rows(dag_id)  # `train` asked for nothing of its own
    assert (row.task_id, row.holder_task_id, row.state) == ("wait_for_gpus", "train", "released")
    assert (row.cluster, row.pool, row.team) == ("cloud-h100", "l4", "nlp")
    assert row.pod_name.startswith("train-") and row.started_at and row.gpu_hours > 0
    assert row.admitted_at > row.queued_at  # it really waited
    assert xcom(dag_id, "wait_for_gpus") == row.id
    assert xcom(dag_id, "train", "placement_id") == row.id
    assert [r.placement_id for r in active_reservations()] == [second_hold]


@pytest.mark.slow
def test_a_sensor_that_times_out_withdraws_its_request(placement_fleet):
    dag_id = "mcsched_gate_timeout"
    hold_capacity(L4_NODE, L4_NODE)  # never freed

    run = placement_fleet.run(DAGS / "mcsched_gpu_gate.py", dag_id)

    assert run.state == "failed"
    (row,) = placement_rows(dag_id)
    assert row.state == "cancelled" and row.gpu_hours == 0
    assert len(active_reservations()) == 2  # only the two holds


@pytest.mark.slow
def test_a_gate_sensor_gives_the_capacity_back_once_it_is_there(placement_fleet):
    dag_id = "mcsched_gate_open"

    run = placement_fleet.run(DAGS / "mcsched_gpu_gate.py", dag_id)

    assert run.state == "success"
    (row,) = placement_rows(dag_id)
    assert row.state == "released" and row.cost == 0 and row.started_at is None
    assert not active_reservations()
