"""PlacementTrigger against the live placement service, as the task instance it waits for."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from airflow_mcsched.hooks.placement import PlacementHook
from airflow_mcsched.service.schemas import PlacementSubmit, ResourceAsk, TaskRef
from airflow_mcsched.service.task_tokens import TaskIdentity
from airflow_mcsched.triggers.placement import PlacementTrigger, next_poll_delay
from tests.operators.placement_fleet import hold_capacity, release_once

OWNER_DAG = Path(__file__).parent / "dags" / "mcsched_trigger_owner.py"
L4_NODE = {"kind": "batch", "gpus": 4, "gpu_types": ["NVIDIA-L4"], "cpu": 1, "memory_gib": 2}


@pytest.fixture
def owner(placement_fleet) -> TaskIdentity:
    """A real task instance (the service checks that the token's task instance exists)."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    run = placement_fleet.run(OWNER_DAG, "mcsched_trigger_owner")
    with create_session() as session:
        ti = session.scalars(
            select(TaskInstance).where(
                TaskInstance.dag_id == "mcsched_trigger_owner", TaskInstance.run_id == run.run_id
            )
        ).one()
        return TaskIdentity(
            ti_id=str(ti.id), dag_id=ti.dag_id, run_id=ti.run_id, task_id=ti.task_id, try_number=ti.try_number
        )


def queue(identity: TaskIdentity, **ask) -> str:
    task = TaskRef(**identity.model_dump(exclude={"ti_id"}))
    body = PlacementSubmit(task=task, ask=ResourceAsk(team="nlp", **ask))
    return PlacementHook(identity).submit(body).id


def first_event(trigger: PlacementTrigger) -> dict:
    async def run() -> dict:
        return (await anext(trigger.run())).payload

    return asyncio.run(run())


def trigger_for(identity: TaskIdentity, placement_id: str, timeout: float | None = 30) -> PlacementTrigger:
    timeout_at = None if timeout is None else time.time() + timeout
    return PlacementTrigger(placement_id, identity.model_dump(), poll_interval=0.2, timeout_at=timeout_at)


def test_it_serializes_into_what_rebuilds_it():
    trigger = PlacementTrigger("p1", {"ti_id": "x", "dag_id": "d", "run_id": "r", "task_id": "t"}, 2.0, 123.0)
    classpath, kwargs = trigger.serialize()

    assert classpath == "airflow_mcsched.triggers.placement.PlacementTrigger"
    assert PlacementTrigger(**kwargs).serialize() == (classpath, kwargs)


def test_polls_back_off_to_a_minute():
    delays = [0.5]
    for _ in range(20):
        delays.append(next_poll_delay(delays[-1]))
    assert delays[1] == 0.75 and delays[-1] == 60.0 and delays == sorted(delays)


@pytest.mark.slow
def test_it_waits_while_capacity_is_held_and_fires_admitted_once_it_frees_up(owner):
    first_hold, _ = hold_capacity(L4_NODE, L4_NODE)
    placement_id = queue(owner, **L4_NODE)
    started = time.monotonic()
    release_once(lambda: time.monotonic() > started + 1.0, first_hold)

    event = first_event(trigger_for(owner, placement_id))

    assert time.monotonic() - started >= 1.0
    assert event["status"] == "admitted" and event["placement_id"] == placement_id
    assert event["cluster"] == "cloud-h100"


@pytest.mark.slow
def test_it_times_out_with_the_last_reason_for_waiting(owner):
    hold_capacity(L4_NODE, L4_NODE)
    placement_id = queue(owner, **L4_NODE)

    event = first_event(trigger_for(owner, placement_id, timeout=0.5))

    assert event["status"] == "timeout" and event["placement_id"] == placement_id
    assert "WaitingForCapacity" in event["message"] and "InsufficientFreeGpus" in event["message"]


@pytest.mark.slow
def test_a_request_no_cluster_can_ever_take_fails_at_once(owner):
    placement_id = queue(owner, gpus=1, gpu_types=["NVIDIA-B200"])

    event = first_event(trigger_for(owner, placement_id, timeout=None))

    assert event["status"] == "unplaceable"
    assert "NoMatchingGpuType" in event["message"]


@pytest.mark.slow
def test_killing_the_waiting_task_withdraws_its_request(owner):
    hold_capacity(L4_NODE, L4_NODE)
    placement_id = queue(owner, **L4_NODE)

    asyncio.run(trigger_for(owner, placement_id).on_kill())

    assert PlacementHook(owner).get(placement_id).state == "cancelled"
