"""One real Airflow deployment for the end-to-end tests: API server (with the placement service),
scheduler, DAG processor and triggerer as separate processes over one SQLite metadata DB, and the
example fleet as virtual clusters in their own processes. Started once per test session."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from airflow_mcsched.access.fleet_file import load_fleet_file
from airflow_mcsched.cli.airflow_stack import AirflowStack
from airflow_mcsched.virtual.fleet import VirtualFleet
from airflow_mcsched.virtual.options import VirtualClusterOptions
from tests.stack_watch import StackWatch, stack_env

REPO = Path(__file__).resolve().parents[2]
FLEET_FILE = REPO / "examples" / "fleet.yaml"


@dataclass
class Deployment:
    stack: AirflowStack
    fleet: VirtualFleet
    dags_folder: Path
    watch: StackWatch

    def mcsched(self, *args: str) -> str:
        cli = str(Path(sys.executable).with_name("mcsched"))
        out = subprocess.run([cli, *args], env=self.stack.env(), check=True, capture_output=True, text=True)
        return out.stdout


@pytest.fixture(scope="session")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    home = tmp_path_factory.mktemp("e2e-airflow")
    dags = home / "dags"
    dags.mkdir()
    for dag_file in (REPO / "dags_examples").glob("*.py"):
        shutil.copy(dag_file, dags / dag_file.name)
    for dag_file in (Path(__file__).parent / "dags").glob("*.py"):
        shutil.copy(dag_file, dags / dag_file.name)
    options = VirtualClusterOptions(default_duration_seconds=1.0, container_start_seconds=0.1)
    with VirtualFleet.start(load_fleet_file(FLEET_FILE), mode="process", options=options,
                            state_dir=home / "virtual-clusters") as fleet:  # fmt: skip
        stack = AirflowStack(
            home,
            f"sqlite:///{home / 'airflow.db'}",
            dags,
            jwt_secret="e2e-" + "k" * 64,
            extra_env={**fleet.connection_env(), "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO", **stack_env()},
        )
        with stack:
            deployment = Deployment(stack, fleet, dags, StackWatch.of(stack))
            deployment.mcsched("clusters", "apply", "-f", str(FLEET_FILE))
            yield deployment
