"""Weekly retraining of the click-through ranker: prepare data, train on 8 GPUs, evaluate, score.

No step names a cluster. Each says what it needs, and the placement service puts it where that
fits best across the fleet: training on A100 or H100 nodes with InfiniBand near its data,
evaluation on any cheap GPU with enough memory (it may be interrupted), batch scoring on a share
of a GPU. The steps are tiny Python programs, so the pipeline also runs on the virtual fleet.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_mcsched.operators.multi_cluster_pod import MultiClusterPodOperator

A100 = "NVIDIA-A100-SXM4-80GB"
H100 = "NVIDIA-H100-80GB-HBM3"
CLICKS = "s3://ml-eu/clickstream/2026/"

PREPARE = """
import random, statistics
random.seed(7)
rows = [(random.gauss(0, 1), random.gauss(0, 1)) for _ in range(20000)]
print(f"sampled {len(rows)} sessions")
for i, name in enumerate(["dwell", "depth"]):
    values = [r[i] for r in rows]
    print(f"feature {name}: mean {statistics.fmean(values):+.3f} sd {statistics.pstdev(values):.3f}")
print("prepared features for", "{{ ds }}")
"""

TRAIN = """
import math, random
random.seed(11)
true_w, true_b = 1.7, -0.4
xs = [random.uniform(-2, 2) for _ in range(2000)]
ys = [1 if true_w * x + true_b + random.gauss(0, 0.3) > 0 else 0 for x in xs]
w = b = 0.0
for epoch in range(1, 6):
    grad_w = grad_b = loss = 0.0
    for x, y in zip(xs, ys):
        p = 1 / (1 + math.exp(-(w * x + b)))
        loss -= y * math.log(p + 1e-9) + (1 - y) * math.log(1 - p + 1e-9)
        grad_w += (p - y) * x
        grad_b += p - y
    w -= 0.5 * grad_w / len(xs)
    b -= 0.5 * grad_b / len(xs)
    print(f"epoch {epoch} loss {loss / len(xs):.4f} w {w:+.3f} b {b:+.3f}", flush=True)
print("saved checkpoint ranker-{{ ds_nodash }}")
"""

EVALUATE = """
import random
random.seed(13)
hits = sum(1 for _ in range(5000) if random.random() < 0.83)
print(f"holdout AUC proxy {hits / 5000:.3f} on 5000 sessions")
"""

SCORE = """
import random
random.seed(17)
total = 0.0
for batch in range(1, 5):
    scores = [random.random() for _ in range(2500)]
    total += sum(scores)
    print(f"scored batch {batch}/4 ({batch * 2500} rows)", flush=True)
print(f"mean score {total / 10000:.4f}")
"""


def python_step(task_id: str, script: str, **needs) -> MultiClusterPodOperator:
    """A step that runs a Python script in the team's image; `needs` says what it must run on."""
    return MultiClusterPodOperator(
        task_id=task_id,
        name=task_id.replace("_", "-"),
        image="python:3.11-slim",
        cmds=["python", "-c"],
        arguments=[script],
        **needs,
    )


with DAG(
    dag_id="retraining_pipeline",
    schedule="@weekly",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["team:recsys", "project:ctr-ranker"],
    default_args={"retries": 1, "retry_delay": timedelta(minutes=5), "startup_check_interval_seconds": 1},
) as dag:
    prepare = python_step("prepare_data", PREPARE, kind="batch", cpu=1, memory_gib=2)
    train = python_step(
        "train",
        TRAIN,
        kind="training",
        gpus=8,
        gpu_types=[A100, H100],
        needs_rdma=True,
        data=[{"location": CLICKS, "size_gib": 200}],
        cpu=8,
        memory_gib=64,
        expected_duration=timedelta(hours=6),
    )
    evaluate = python_step(
        "evaluate", EVALUATE, kind="eval", gpus=1, min_gpu_memory_gib=20, interruptible=True, cpu=2, memory_gib=8
    )
    score = python_step(
        "batch_inference", SCORE, kind="inference", gpu_milli=500, cpu=1, memory_gib=4, expected_duration=1800
    )

    prepare >> train >> evaluate >> score
