"""A sensor used as a gate: it checks that 4 L4 GPUs can be had, gives them back, and times out fast."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG

from airflow_mcsched.sensors.placement import PlacementSensor

with DAG(Path(__file__).stem, start_date=datetime(2026, 1, 1), schedule=None, catchup=False, tags=["team:nlp"]) as dag:
    PlacementSensor(
        task_id="gpus_available",
        kind="batch",
        gpus=4,
        gpu_types=["NVIDIA-L4"],
        cpu=1,
        memory_gib=2,
        poke_interval=0.3,
        timeout=3,
    )
