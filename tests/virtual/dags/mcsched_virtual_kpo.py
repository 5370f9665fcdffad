"""A DAG with one KubernetesPodOperator task, run by tests against a virtual cluster.

Tests copy it into the dags folder under a new name: the DAG id is the file name, and a name
containing "deferrable" makes the task deferrable, so one file serves both tests.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
from airflow.sdk import DAG

TRAIN_STEP = """
import math, time
for step in range(3):
    print(f"step {step} loss {math.exp(-step):.4f}", flush=True)
    time.sleep(0.4)
"""

with DAG(
    Path(__file__).stem,
    start_date=datetime(2026, 1, 1),
    schedule=None,
    catchup=False,
) as dag:
    KubernetesPodOperator(
        task_id="train_step",
        kubernetes_conn_id=os.environ.get("MCSCHED_TEST_CONN_ID", "mcsched_onprem_a100"),
        name="train-step",
        image="python:3.11-slim",
        cmds=["python", "-c"],
        arguments=[TRAIN_STEP],
        container_resources={"limits": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"}},
        get_logs=True,
        deferrable="deferrable" in Path(__file__).stem,
        poll_interval=1,
        startup_check_interval_seconds=1,
        on_finish_action="keep_pod",
    )
