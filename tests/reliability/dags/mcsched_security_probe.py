"""Two idle tasks: their task-instance rows are the identities the security tests sign tokens for."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, task


@task
def owner() -> None:
    return None


@task
def neighbour() -> None:
    return None


with DAG(Path(__file__).stem, start_date=datetime(2026, 1, 1), schedule=None, catchup=False) as dag:
    owner() >> neighbour()
