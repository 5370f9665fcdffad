"""A long, low-priority, interruptible step on a whole L4 node: the first to go when critical work comes."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG

from airflow_mcsched.operators.multi_cluster_pod import MultiClusterPodOperator

SWEEP = """
import time
for trial in range(300):
    print(f"hyper-parameter trial {trial}", flush=True)
    time.sleep(0.1)
"""

with DAG(
    Path(__file__).stem, start_date=datetime(2026, 1, 1), schedule=None, catchup=False, tags=["team:research"]
) as dag:
    MultiClusterPodOperator(
        task_id="sweep",
        kind="experiment",
        gpus=4,
        gpu_types=["NVIDIA-L4"],
        interruptible=True,
        priority_class="low",
        cpu=1,
        memory_gib=2,
        image="python:3.11-slim",
        cmds=["python", "-c"],
        arguments=[SWEEP],
        lease_renew_interval=0.5,
        startup_check_interval_seconds=1,
    )
