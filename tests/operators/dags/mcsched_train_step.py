"""One 8-GPU training step (A100 or H100 with RDMA), copied into the dags folder under a new name.

Failover tests break the first cluster the policy picks (onprem-a100) after its capacity was read,
so the launch there fails and the step must move to the other cluster that fits (cloud-h100).
A DAG id containing "deferrable" runs the step deferrable.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG

from airflow_mcsched.operators.multi_cluster_pod import MultiClusterPodOperator

TRAIN = """
import math
for step in range(3):
    print(f"step {step} loss {math.exp(-step):.4f}", flush=True)
"""

with DAG(
    Path(__file__).stem, start_date=datetime(2026, 1, 1), schedule=None, catchup=False, tags=["team:vision"]
) as dag:
    MultiClusterPodOperator(
        task_id="train",
        kind="training",
        gpus=8,
        gpu_types=["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"],
        needs_rdma=True,
        cpu=2,
        memory_gib=8,
        image="python:3.11-slim",
        cmds=["python", "-c"],
        arguments=[TRAIN],
        schedule_timeout_seconds=2,
        startup_check_interval_seconds=1,
        cluster_probe_timeout=3,
        deferrable="deferrable" in Path(__file__).stem,
        poll_interval=0.5,
    )
