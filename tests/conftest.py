"""Test-wide set-up: a private AIRFLOW_HOME with SQLite, made before anything imports Airflow.

Airflow reads its configuration at import time, so the environment is set at the top of this
module, which pytest imports first. `airflow_db` migrates the metadata DB once per session.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_HOME = Path(os.environ.get("MCSCHED_TEST_AIRFLOW_HOME") or tempfile.mkdtemp(prefix="mcsched-airflow-"))
(_HOME / "dags").mkdir(parents=True, exist_ok=True)

os.environ.update(
    {
        "AIRFLOW_HOME": str(_HOME),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": os.environ.get(
            "MCSCHED_TEST_SQL_ALCHEMY_CONN", f"sqlite:///{_HOME / 'airflow.db'}"
        ),
        "AIRFLOW__CORE__DAGS_FOLDER": str(_HOME / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__API_AUTH__JWT_SECRET": "mcsched-tests-" + "x" * 64,
        "AIRFLOW__CORE__FERNET_KEY": "",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
    }
)


@pytest.fixture(scope="session")
def airflow_home() -> Path:
    return _HOME


@pytest.fixture(scope="session")
def airflow_db(airflow_home: Path) -> Path:
    """A migrated Airflow metadata DB (core tables plus ours), once per test session."""
    airflow = Path(sys.executable).with_name("airflow")
    subprocess.run([str(airflow), "db", "migrate"], check=True, capture_output=True, env=os.environ.copy())
    return airflow_home
