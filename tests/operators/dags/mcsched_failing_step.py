"""One GPU step whose program fails (exit code 3): the task fails and its placement is released."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG

from airflow_mcsched.operators.multi_cluster_pod import MultiClusterPodOperator

FAIL = """
import sys
print("loading checkpoint ... corrupted", flush=True)
sys.exit(3)
"""

with DAG(Path(__file__).stem, start_date=datetime(2026, 1, 1), schedule=None, catchup=False) as dag:
    MultiClusterPodOperator(
        task_id="evaluate",
        team="vision",
        project="detector",
        kind="eval",
        gpus=1,
        gpu_types=["Tesla-T4"],
        cpu=1,
        memory_gib=2,
        image="python:3.11-slim",
        cmds=["python", "-c"],
        arguments=[FAIL],
        startup_check_interval_seconds=1,
    )
