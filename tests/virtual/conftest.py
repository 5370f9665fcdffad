"""Fixtures for virtual-cluster tests: fresh in-process clusters and the real `kubernetes` client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_mcsched.access.fleet_file import load_fleet_file
from airflow_mcsched.access.profiles import FleetSpec
from airflow_mcsched.virtual.fleet import ClusterHandle, VirtualFleet
from airflow_mcsched.virtual.options import VirtualClusterOptions

EXAMPLE_FLEET = Path(__file__).resolve().parents[2] / "examples" / "fleet.yaml"
FAST = VirtualClusterOptions(default_duration_seconds=0.2, container_start_seconds=0.02)


@pytest.fixture(scope="session")
def fleet_spec() -> FleetSpec:
    return load_fleet_file(EXAMPLE_FLEET)


@pytest.fixture
def fleet(fleet_spec: FleetSpec) -> Iterator[VirtualFleet]:
    """All three example clusters, fresh for each test (they start in milliseconds)."""
    with VirtualFleet.start(fleet_spec, options=FAST) as running:
        yield running


@pytest.fixture
def a100(fleet_spec: FleetSpec) -> Iterator[ClusterHandle]:
    """Only onprem-a100: 2 nodes x 8 A100 GPUs, 2 CPU nodes."""
    with VirtualFleet.start(fleet_spec, options=FAST, only=["onprem-a100"]) as running:
        yield running.cluster("onprem-a100")


@pytest.fixture
def t4(fleet_spec: FleetSpec) -> Iterator[ClusterHandle]:
    """Only baremetal-t4: 3 nodes x 4 T4 GPUs with GPU sharing."""
    with VirtualFleet.start(fleet_spec, options=FAST, only=["baremetal-t4"]) as running:
        yield running.cluster("baremetal-t4")


@pytest.fixture
def api(a100: ClusterHandle):
    """A kubernetes.client.CoreV1Api for onprem-a100."""
    return a100.core_v1()
