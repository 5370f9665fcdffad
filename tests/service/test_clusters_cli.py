"""`mcsched clusters ...` as a user runs it: a real process against a real metadata DB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FLEET = Path(__file__).resolve().parents[2] / "examples" / "fleet.yaml"


@pytest.fixture
def mcsched(airflow_db: Path, tmp_path: Path):
    """Runs the CLI with a fresh SQLite metadata DB of its own (migrated by `airflow db migrate`)."""
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{tmp_path / 'airflow.db'}",
    }
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "airflow"), "db", "migrate"], check=True, capture_output=True, env=env)

    def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(bin_dir / "mcsched"), *args], capture_output=True, text=True, env=env)
        assert (done.returncode == 0) == ok, done.stderr
        return done

    return run


def test_apply_list_cordon_and_delete_round_trip(mcsched):
    assert "create    onprem-a100" in mcsched("clusters", "apply", "-f", str(FLEET)).stdout
    assert "unchanged onprem-a100" in mcsched("clusters", "apply", "-f", str(FLEET)).stdout
    mcsched("clusters", "cordon", "cloud-h100", "--reason", "driver upgrade")
    listed = {
        c["profile"]["name"]: c["profile"]["state"]
        for c in json.loads(mcsched("clusters", "list", "--format", "json").stdout)
    }
    assert listed == {"onprem-a100": "active", "cloud-h100": "cordoned", "baremetal-t4": "active"}
    mcsched("clusters", "delete", "baremetal-t4")
    assert "baremetal-t4" not in mcsched("clusters", "list").stdout


def test_a_file_with_one_bad_cluster_changes_nothing(mcsched, tmp_path: Path):
    mcsched("clusters", "apply", "-f", str(FLEET))
    before = mcsched("clusters", "list", "--format", "json").stdout
    text = FLEET.read_text().replace("price_per_gpu_hour: 1.20", "price_per_gpu_hour: 2.40")  # a valid change
    text = text.replace("nodes: 3", "nodes: 0")  # and an invalid one elsewhere
    bad = tmp_path / "fleet.yaml"
    bad.write_text(text)
    done = mcsched("clusters", "apply", "-f", str(bad), ok=False)
    assert done.returncode == 2
    assert str(bad) in done.stderr and "clusters['baremetal-t4'].node_pools['t4'].nodes" in done.stderr
    assert mcsched("clusters", "list", "--format", "json").stdout == before


def test_dry_run_prints_the_diff_and_writes_nothing(mcsched, tmp_path: Path):
    mcsched("clusters", "apply", "-f", str(FLEET))
    changed = tmp_path / "fleet.yaml"
    changed.write_text(FLEET.read_text().replace("price_per_gpu_hour: 0.35", "price_per_gpu_hour: 0.30"))
    out = mcsched("clusters", "apply", "-f", str(changed), "--dry-run").stdout
    assert "node_pools[t4].price_per_gpu_hour: 0.35 -> 0.3" in out
    assert "0.35" in mcsched("clusters", "show", "baremetal-t4").stdout
