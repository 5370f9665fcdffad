"""One do-nothing task: its task instance is the identity the trigger tests wait as."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, task


@task
def owner() -> str:
    return "here"


with DAG(Path(__file__).stem, start_date=datetime(2026, 1, 1), schedule=None, catchup=False) as dag:
    owner()
