"""Fleet files: the example loads; every bad file names the file, the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_mcsched.access.fleet_file import FleetFileError, load_fleet_file
from airflow_mcsched.access.profiles import ClusterState

REPO = Path(__file__).resolve().parents[2]


def test_example_fleet_loads_three_different_clusters():
    fleet = load_fleet_file(REPO / "examples" / "fleet.yaml")
    assert len(fleet.clusters) >= 3
    assert len({tuple(c.gpu_types) for c in fleet.clusters}) == len(fleet.clusters)
    prices = {p.price_per_gpu_hour for c in fleet.clusters for p in c.node_pools if p.gpu_type}
    assert len(prices) >= 3
    assert all(c.state is ClusterState.ACTIVE for c in fleet.clusters)
    assert fleet.cluster("onprem-a100").conn_id == "mcsched_onprem_a100"


GOOD_POOL = "      - {name: p1, gpu_type: T4, gpus_per_node: 4, nodes: 2}\n"


@pytest.mark.parametrize(
    ("body", "field", "hint"),
    [
        (
            "clusters:\n  - name: Bad_Name\n    node_pools:\n" + GOOD_POOL,
            "clusters['Bad_Name'].name",
            "DNS-1123",
        ),
        (
            "clusters:\n  - name: a\n    colour: red\n    node_pools:\n" + GOOD_POOL,
            "clusters['a'].colour",
            "unknown field",
        ),
        ("clusters:\n  - name: a\n", "clusters['a'].node_pools", "required field is missing"),
        (
            "clusters:\n  - name: a\n    node_pools:\n      - {name: p1, gpu_type: T4, nodes: 2}\n",
            "clusters['a'].node_pools['p1']",
            "set gpus_per_node",
        ),
        (
            "clusters:\n  - name: a\n    node_pools:\n      - {name: p1, gpus_per_node: 8, nodes: 1}\n",
            "clusters['a'].node_pools['p1']",
            "set gpu_type",
        ),
        (
            "clusters:\n  - name: a\n    node_pools:\n"
            "      - {name: p1, gpu_type: T4, gpus_per_node: 4, nodes: 1, price_per_gpu_hour: 1, "
            "spot_price_per_gpu_hour: 2}\n",
            "clusters['a'].node_pools['p1']",
            "must not exceed",
        ),
        (
            "clusters:\n  - name: a\n    state: paused\n    node_pools:\n" + GOOD_POOL,
            "clusters['a'].state",
            "active",
        ),
        (
            "clusters:\n  - name: a\n    node_pools:\n" + GOOD_POOL + "  - name: a\n    node_pools:\n" + GOOD_POOL,
            "clusters",
            "unique",
        ),
        ("clusters: [\n", "line", "not valid YAML"),
        ("- just a list\n", "top level", "clusters:"),
    ],
)
def test_bad_fleet_file_names_file_field_and_fix(tmp_path: Path, body: str, field: str, hint: str):
    path = tmp_path / "fleet.yaml"
    path.write_text(body)
    with pytest.raises(FleetFileError) as err:
        load_fleet_file(path)
    message = str(err.value)
    assert str(path) in message
    assert field in message
    assert hint in message


def test_missing_file_is_a_clear_error(tmp_path: Path):
    with pytest.raises(FleetFileError, match="cannot read the file"):
        load_fleet_file(tmp_path / "nope.yaml")
