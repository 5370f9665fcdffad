"""Starting fleets (threads and processes), the files they write, and the `mcsched virtual-clusters` CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml
from conftest import EXAMPLE_FLEET
from kubernetes import client, config
from pod_specs import pod, wait_phase

from airflow_mcsched.virtual.fleet import VirtualFleet

MCSCHED = [sys.executable, "-m", "airflow_mcsched.cli.main", "virtual-clusters"]


def test_thread_mode_serves_every_cluster_from_this_process(fleet_spec):
    # how fast a fleet starts is a benchmark's figure (bench_virtual_clusters.py), not a test's
    with VirtualFleet.start(fleet_spec) as fleet:
        assert len(fleet.handles) == 3 and {h.pid for h in fleet} == {os.getpid()}
        assert fleet.cluster("baremetal-t4").summary()["gpus"] == 12


def test_process_mode_runs_each_cluster_in_its_own_process(fleet_spec):
    with VirtualFleet.start(fleet_spec, mode="process") as fleet:
        pids = {h.pid for h in fleet}
        api = fleet.cluster("baremetal-t4").core_v1()
        api.create_namespaced_pod("default", pod("remote", duration=0.1))
        assert wait_phase(api, "remote", "Succeeded")
        assert fleet.cluster("baremetal-t4").summary()["gpus"] == 12
    assert len(pids) == 3 and os.getpid() not in pids


def test_state_dir_gets_kubeconfigs_and_airflow_connections(fleet_spec, tmp_path):
    with VirtualFleet.start(fleet_spec, state_dir=tmp_path, only=["cloud-h100"]) as fleet:
        kubeconfig = tmp_path / "kubeconfig" / "cloud-h100.yaml"
        configuration = client.Configuration()
        config.load_kube_config(str(kubeconfig), client_configuration=configuration)
        assert len(client.CoreV1Api(client.ApiClient(configuration)).list_node().items) == 3
        connections = json.loads((tmp_path / "connections.json").read_text())
        conn = connections["mcsched_cloud_h100"]
        assert conn["conn_type"] == "kubernetes"
        assert conn["extra"]["kube_config"]["clusters"][0]["cluster"]["server"] == fleet.cluster("cloud-h100").url
        env_line = (tmp_path / "connections.env").read_text().strip()
        assert env_line.startswith("AIRFLOW_CONN_MCSCHED_CLOUD_H100='{")
        assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600"


def test_connections_file_is_what_airflow_connections_import_reads(fleet_spec, tmp_path):
    from airflow.secrets.local_filesystem import load_connections_dict

    with VirtualFleet.start(fleet_spec, state_dir=tmp_path, only=["onprem-a100"]):
        connections = load_connections_dict(str(tmp_path / "connections.json"))
    conn = connections["mcsched_onprem_a100"]
    assert conn.conn_type == "kubernetes"
    assert conn.extra_dejson["kube_config"]["current-context"] == "onprem-a100"


def test_connection_env_for_airflow(fleet_spec):
    with VirtualFleet.start(fleet_spec) as fleet:
        env = fleet.connection_env()
    assert set(env) == {
        "AIRFLOW_CONN_MCSCHED_ONPREM_A100",
        "AIRFLOW_CONN_MCSCHED_CLOUD_H100",
        "AIRFLOW_CONN_MCSCHED_BAREMETAL_T4",
    }
    assert json.loads(env["AIRFLOW_CONN_MCSCHED_ONPREM_A100"])["extra"]["namespace"] == "default"


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCSCHED, *args], capture_output=True, text=True, timeout=timeout, check=False)


def test_cli_up_detach_status_down(tmp_path):
    state = str(tmp_path / "state")
    up = _cli("up", "-f", str(EXAMPLE_FLEET), "--state-dir", state, "--detach", "--runtime", "timed")
    assert up.returncode == 0, up.stderr
    assert "onprem-a100" in up.stdout and "16/16" in up.stdout, up.stdout
    try:
        records = json.loads((Path(state) / "state.json").read_text())["clusters"]
        assert {r["name"] for r in records} == {"onprem-a100", "cloud-h100", "baremetal-t4"}
        kubeconfig = yaml.safe_load((Path(state) / "kubeconfig" / "onprem-a100.yaml").read_text())
        assert kubeconfig["users"][0]["user"]["token"] == records[0]["token"]
        status = _cli("status", "--state-dir", state)
        assert status.returncode == 0 and status.stdout.count(" up ") == 3, status.stdout + status.stderr
        again = _cli("up", "-f", str(EXAMPLE_FLEET), "--state-dir", state, "--detach")
        assert again.returncode == 2 and "already run" in again.stderr, again.stdout + again.stderr
    finally:
        down = _cli("down", "--state-dir", state)
    assert down.returncode == 0 and "stopped 3" in down.stdout, down.stdout + down.stderr
    assert not (Path(state) / "state.json").exists()
    for record in records:
        assert (
            not Path(f"/proc/{record['pid']}").exists()
            or b"virtual.serve" not in Path(f"/proc/{record['pid']}/cmdline").read_bytes()
        )


def test_cli_up_in_the_foreground_stops_on_ctrl_c(tmp_path):
    import signal

    state = tmp_path / "fg"
    process = subprocess.Popen(
        [*MCSCHED, "up", "-f", str(EXAMPLE_FLEET), "--state-dir", str(state), "--cluster", "cloud-h100"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (state / "state.json").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert (state / "state.json").exists()
        # at once: the state file is written while the fleet starts, before the table prints and the
        # serving loop; a Ctrl-C there used to end the command without stopping the servers
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert "virtual clusters stopped" in out
    assert not (state / "state.json").exists()


def test_cli_rejects_a_broken_fleet_file(tmp_path):
    bad = tmp_path / "fleet.yaml"
    bad.write_text("clusters:\n  - name: Bad_Name\n    node_pools: []\n")
    result = _cli("up", "-f", str(bad), "--state-dir", str(tmp_path / "s"))
    assert result.returncode == 2
    assert "invalid fleet file" in result.stderr


def test_process_servers_take_the_token_from_the_environment(fleet_spec):
    token = "-looks-like-an-option"  # random tokens can start with '-'
    with VirtualFleet.start(fleet_spec, mode="process", token=token, only=["cloud-h100"]) as fleet:
        handle = fleet.cluster("cloud-h100")
        assert handle.core_v1().list_node().items
        assert token.encode() not in Path(f"/proc/{handle.pid}/cmdline").read_bytes()
