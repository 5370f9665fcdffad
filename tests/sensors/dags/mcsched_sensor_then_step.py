"""A sensor secures four L4 GPUs and hands them to `train`, which runs on that very reservation.

The file name says the sensor's mode: "deferrable" in it waits in the triggerer, else it pokes.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG

from airflow_mcsched.operators.multi_cluster_pod import MultiClusterPodOperator
from airflow_mcsched.sensors.placement import PlacementSensor

TRAIN = """
for epoch in range(3):
    print(f"fine-tune epoch {epoch}", flush=True)
"""

with DAG(Path(__file__).stem, start_date=datetime(2026, 1, 1), schedule=None, catchup=False, tags=["team:nlp"]) as dag:
    wait_for_gpus = PlacementSensor(
        task_id="wait_for_gpus",
        kind="fine-tune",
        gpus=4,
        gpu_types=["NVIDIA-L4"],
        cpu=1,
        memory_gib=2,
        hold_for_task_id="train",
        deferrable="deferrable" in Path(__file__).stem,
        poke_interval=0.3,
        timeout=60,
    )
    train = MultiClusterPodOperator(
        task_id="train",
        placement_id="{{ ti.xcom_pull('wait_for_gpus') }}",
        image="python:3.11-slim",
        cmds=["python", "-c"],
        arguments=[TRAIN],
        startup_check_interval_seconds=1,
    )
    wait_for_gpus >> train
