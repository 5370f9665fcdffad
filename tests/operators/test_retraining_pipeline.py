"""The example retraining pipeline runs on the virtual fleet, each step where the policy puts it.

One run in a fresh process (so the task log is at INFO), then the lineage in the metadata DB.
"""

from __future__ import annotations

import pytest

from tests.operators.placement_fleet import REPO, active_reservations, placement_rows

EXAMPLE = REPO / "dags_examples" / "retraining_pipeline.py"
DAG_ID = "retraining_pipeline"
TRAINING_GPUS = {"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"}


@pytest.mark.slow
def test_the_pipeline_succeeds_and_ends_every_placement(placement_fleet):
    log = placement_fleet.run_logged(EXAMPLE, DAG_ID)
    rows = {r.task_id: r for r in placement_rows(DAG_ID)}

    assert "DAG RUN STATE: success" in log, log[-4000:]
    assert set(rows) == {"prepare_data", "train", "evaluate", "batch_inference"}
    assert all(r.state == "released" and r.started_at and r.ended_at for r in rows.values())
    assert not active_reservations()

    train, evaluate, score = rows["train"], rows["evaluate"], rows["batch_inference"]
    train_pool = placement_fleet.pool(train.cluster, train.pool)
    assert train.gpu_type in TRAINING_GPUS and train_pool.has_rdma and train.gpus == 8
    eval_pool = placement_fleet.pool(evaluate.cluster, evaluate.pool)
    assert eval_pool.gpu_memory_gib >= 20 and evaluate.interruptible
    assert evaluate.price_per_gpu_hour == (eval_pool.spot_price_per_gpu_hour or eval_pool.price_per_gpu_hour)
    assert placement_fleet.pool(score.cluster, score.pool).gpu_sharing and score.gpus == 0.5

    for r in (train, evaluate, score):
        assert r.gpu_hours > 0 and r.cost > 0
        assert r.cost == pytest.approx(r.gpu_hours * r.price_per_gpu_hour)
        assert r.team == "recsys" and r.project == "ctr-ranker"  # from the DAG's tags

    assert f"admitted to {train.cluster}/{train.pool}" in log  # the lineage, in the task log
    assert "score parts: price" in log
    assert f"Placement {train.id} on {train.cluster}/{train.pool} is released (succeeded)" in log
    assert "[base] epoch 5 loss" in log  # the pod's own output
