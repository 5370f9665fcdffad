"""Deferrable mode: the step waits for admission in the triggerer, then KPO defers on the pod."""

from __future__ import annotations

import pytest

from tests.operators.placement_fleet import active_reservations, hold_capacity, placement_rows, release_once

L4_NODE = {"kind": "batch", "gpus": 4, "gpu_types": ["NVIDIA-L4"], "cpu": 1, "memory_gib": 2}


@pytest.mark.slow
def test_a_deferrable_step_waits_in_the_triggerer_then_runs_and_releases(placement_fleet):
    dag_id = "mcsched_deferrable_op"
    first_hold, second_hold = hold_capacity(L4_NODE, L4_NODE)  # both L4 nodes are taken: the step waits
    # once the step has said it waits (the DB's pending row alone races with the submit's answer)
    release_once(placement_fleet.has_logged(dag_id, "deferring until admitted"), first_hold)

    log = placement_fleet.run_logged("mcsched_deferrable_step.py", dag_id)

    assert "DAG RUN STATE: success" in log, log[-4000:]
    (row,) = placement_rows(dag_id)
    assert (row.cluster, row.pool, row.state, row.end_reason) == ("cloud-h100", "l4", "released", "succeeded")
    assert (row.team, row.project) == ("search", "reranker")  # from the DAG's params
    assert row.admitted_at > row.queued_at and row.started_at and row.gpu_hours > 0
    assert [r.placement_id for r in active_reservations()] == [second_hold]

    assert f"Placement {row.id} is queued (Waiting (WaitingForCapacity)" in log  # and why
    assert "deferring until admitted" in log and "InsufficientFreeGpus" in log
    assert log.count("[DAG TEST] running trigger in line") == 2  # PlacementTrigger, then KPO's pod trigger
    assert "[base] logs: scored batch 2" in log  # the pod's output, read on resume
