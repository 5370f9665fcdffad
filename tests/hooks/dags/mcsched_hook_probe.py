"""Two tasks that talk to the placement service with their own tokens (copied into the dags folder).

`owner` queues a placement for itself, starts and releases it; `intruder` then tries to release
the owner's placement with its own token, and must be refused.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, task


@task
def owner(**context):
    from airflow_mcsched.hooks.placement import PlacementHook, task_identity
    from airflow_mcsched.service.schemas import PlacementSubmit

    me = task_identity(context)
    hook = PlacementHook(me)
    body = PlacementSubmit.model_validate(
        {
            "task": {"dag_id": me.dag_id, "run_id": me.run_id, "task_id": me.task_id, "map_index": me.map_index,
                     "try_number": me.try_number},
            "ask": {"kind": "eval", "gpus": 1, "cpu": 1, "memory_gib": 2},
            "dag_tags": ["team:probe"],
        }
    )  # fmt: skip
    placed = hook.submit(body)
    assert placed.state == "admitted", placed.explanation
    assert hook.submit(body).id == placed.id  # idempotent
    hook.start(placed.id, "probe-pod")
    hook.renew(placed.id)
    released = hook.release(placed.id, "succeeded")
    assert released.state == "released"
    return placed.id


@task
def intruder(placement_id: str, **context):
    from airflow_mcsched.hooks.placement import PlacementHook, PlacementServiceError, task_identity

    try:
        PlacementHook(task_identity(context), retries=0).release(placement_id, "killed")
    except PlacementServiceError as err:
        assert err.status_code == 403, err
        return "refused"
    raise AssertionError("another task's release was accepted")


with DAG(Path(__file__).stem, start_date=datetime(2026, 1, 1), schedule=None, catchup=False) as dag:
    intruder(owner())
