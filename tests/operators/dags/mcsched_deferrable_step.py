"""A deferrable step asking for a whole L4 node; tests fill the L4 pool first, so it must wait.

It waits for admission in the PlacementTrigger, then runs its pod through KPO's own deferral.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG

from airflow_mcsched.operators.multi_cluster_pod import MultiClusterPodOperator

SCORE = """
for batch in range(3):
    print(f"scored batch {batch}", flush=True)
"""

with DAG(
    Path(__file__).stem,
    start_date=datetime(2026, 1, 1),
    schedule=None,
    catchup=False,
    params={"team": "search", "project": "reranker"},
) as dag:
    MultiClusterPodOperator(
        task_id="score",
        resource_ask={"kind": "inference", "gpus": 4, "gpu_types": ["NVIDIA-L4"], "cpu": 1, "memory_gib": 2},
        image="python:3.11-slim",
        cmds=["python", "-c"],
        arguments=[SCORE],
        deferrable=True,
        placement_poll_interval=0.3,
        poll_interval=0.5,
        startup_check_interval_seconds=1,
    )
