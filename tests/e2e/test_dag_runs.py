"""DAG runs under the real scheduler: placements follow the policy, lineage and cost add up,
priority orders the queue, and a lost node moves a step elsewhere on retry."""

from __future__ import annotations

import time
from urllib.parse import quote

import pytest

RETRAINING = "retraining_pipeline"


def placements(deployment, dag_id: str, run_id: str | None = None) -> list[dict]:
    query = f"dag_id={dag_id}" + (f"&run_id={quote(run_id)}" if run_id else "")
    return deployment.stack.api("GET", f"/mcsched/api/v1/placements?{query}")["placements"]


def wait_for_placement(deployment, dag_id: str, states: set[str], timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # decided: a request is recorded as pending before its first admission cycle explains it
        found = [p for p in placements(deployment, dag_id) if p["state"] in states and p.get("explanation")]
        if found:
            return found[-1]
        time.sleep(0.5)
    raise TimeoutError(f"no placement of {dag_id} in {states}: {placements(deployment, dag_id)}")


@pytest.mark.slow
def test_the_scheduled_retraining_pipeline_places_each_step_where_the_policy_implies(deployment):
    stack = deployment.stack
    stack.wait_for_dag(RETRAINING)
    run_id = stack.scheduled_run(RETRAINING)  # the scheduler's own run of the weekly pipeline
    assert run_id.startswith("scheduled__")
    assert stack.wait_for_run(RETRAINING, run_id, timeout=240) == "success", stack.task_states(RETRAINING, run_id)
    by_task = {p["task"]["task_id"]: p for p in placements(deployment, RETRAINING, run_id)}
    assert set(by_task) == {"prepare_data", "train", "evaluate", "batch_inference"}
    assert all(p["state"] == "released" and p["ended_at"] and p["started_at"] for p in by_task.values())

    fleet = deployment.fleet.spec
    train = by_task["train"]
    train_pool = fleet.cluster(train["cluster"]).pool(train["pool"])
    assert train_pool.gpu_type in ("NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3") and train_pool.has_rdma
    assert train["cluster"] == "onprem-a100"  # its dataset lives there and it is the cheaper of the two
    evaluate = by_task["evaluate"]
    assert fleet.cluster(evaluate["cluster"]).pool(evaluate["pool"]).gpu_memory_gib >= 20
    batch = by_task["batch_inference"]
    assert fleet.cluster(batch["cluster"]).pool(batch["pool"]).gpu_sharing
    assert by_task["prepare_data"]["gpu_type"] is None  # CPU work does not take a GPU node

    for p in by_task.values():  # lineage adds up: cost = GPU-hours x the price it ran at
        assert p["team"] == "recsys" and p["project"] == "ctr-ranker"
        assert p["cost"] == pytest.approx(p["gpu_hours"] * p["price_per_gpu_hour"])
        assert p["explanation"]["chosen"]["cluster"] == p["cluster"]
    assert by_task["train"]["gpu_hours"] > 0 and by_task["train"]["cost"] > 0


@pytest.mark.slow
def test_a_higher_priority_request_admitted_while_a_lower_one_waits_goes_first(deployment):
    stack = deployment.stack
    for dag_id in ("e2e_hold_h100", "e2e_low_h100", "e2e_high_h100"):
        stack.wait_for_dag(dag_id)
    hold_run = stack.trigger("e2e_hold_h100")
    wait_for_placement(deployment, "e2e_hold_h100", {"admitted", "running"})
    low_run = stack.trigger("e2e_low_h100")
    low = wait_for_placement(deployment, "e2e_low_h100", {"pending"})
    assert any(r["reason"] == "InsufficientFreeGpus" for r in low["explanation"]["rejections"])
    high_run = stack.trigger("e2e_high_h100")
    wait_for_placement(deployment, "e2e_high_h100", {"pending"})
    for dag_id, run_id in (("e2e_hold_h100", hold_run), ("e2e_high_h100", high_run), ("e2e_low_h100", low_run)):
        assert stack.wait_for_run(dag_id, run_id, timeout=180) == "success"
    [high] = placements(deployment, "e2e_high_h100", high_run)
    [low] = placements(deployment, "e2e_low_h100", low_run)
    assert high["queued_at"] > low["queued_at"]
    assert high["admitted_at"] < low["admitted_at"]


@pytest.mark.slow
def test_a_node_lost_under_a_running_step_moves_it_on_retry_and_the_run_succeeds(deployment):
    stack = deployment.stack
    stack.wait_for_dag("e2e_node_lost")
    run_id = stack.trigger("e2e_node_lost")
    first = wait_for_placement(deployment, "e2e_node_lost", {"running"})
    handle = deployment.fleet.cluster(first["cluster"])
    [lost] = first["nodes"]
    handle.set_node_ready(lost, False)  # its running pods fail, as on node loss
    try:
        assert stack.wait_for_run("e2e_node_lost", run_id, timeout=240) == "success"
    finally:
        handle.set_node_ready(lost, True)
    tries = sorted(placements(deployment, "e2e_node_lost", run_id), key=lambda p: p["task"]["try_number"])
    assert [p["task"]["try_number"] for p in tries] == [1, 2]
    assert tries[0]["state"] == "released" and "failed" in tries[0]["end_reason"]
    assert lost not in tries[1]["nodes"] and tries[1]["state"] == "released"
