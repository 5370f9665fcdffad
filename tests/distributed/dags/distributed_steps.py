"""The distributed test's DAG: two GPU steps in parallel, each asking for 4 GPUs of any of three
types and naming no cluster.

Four concurrent runs ask for 32 GPUs at once, more than any one cluster of the example fleet has
free for this priority (on-prem keeps 8 of its 16 A100s for critical work), so the placement
service has to spread the steps over clusters and queue the rest, while two Celery workers ask
for them at the same moment. The pods run on the virtual clusters' timed runtime: they hold their
GPUs for a few seconds and end.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_mcsched.operators.multi_cluster_pod import MultiClusterPodOperator

DAG_ID = "distributed_gpu_steps"
GPU_TYPES = ["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-L4"]
STEPS = ("shard_a", "shard_b")
GPUS_PER_STEP = 4
STEP_SECONDS = 4

with DAG(
    DAG_ID,
    start_date=datetime(2026, 1, 1),
    schedule=None,
    catchup=False,
    max_active_runs=8,
    tags=["team:distributed", "project:tests"],
) as dag:
    for step in STEPS:
        MultiClusterPodOperator(
            task_id=step,
            name=f"distributed-{step.replace('_', '-')}",
            image="trainer:latest",
            annotations={"mcsched.io/duration-seconds": str(STEP_SECONDS), "mcsched.io/runtime": "timed"},
            kind="training",
            gpus=GPUS_PER_STEP,
            gpu_types=GPU_TYPES,
            placement_poll_interval=1,
            startup_check_interval_seconds=1,
            poll_interval=1,
        )
