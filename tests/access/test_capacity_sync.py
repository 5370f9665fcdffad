"""The capacity sync against virtual clusters, through the real kubernetes client, the clusters'
Airflow connections and a real metadata DB (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_mcsched.access.connections import ConnectionClients
from airflow_mcsched.access.fleet_file import load_fleet_file
from airflow_mcsched.access.sync import CapacitySync
from airflow_mcsched.service.cluster_store import ClusterStore
from airflow_mcsched.service.status_store import ClusterStatus, StatusStore
from airflow_mcsched.service.sync_ledger import DbSyncLedger
from airflow_mcsched.virtual.fleet import VirtualFleet, wait_for
from airflow_mcsched.virtual.options import VirtualClusterOptions

FLEET = Path(__file__).resolve().parents[2] / "examples" / "fleet.yaml"
FAST = VirtualClusterOptions(default_duration_seconds=0.2, container_start_seconds=0.02)


@pytest.fixture
def fleet(monkeypatch: pytest.MonkeyPatch) -> Iterator[VirtualFleet]:
    with VirtualFleet.start(load_fleet_file(FLEET), options=FAST) as running:
        for key, value in running.connection_env().items():
            monkeypatch.setenv(key, value)
        yield running


@pytest.fixture
def sync(fleet: VirtualFleet, metadata_session_factory) -> CapacitySync:
    with metadata_session_factory() as s:
        ClusterStore(s).apply(fleet.spec, "test")
    return CapacitySync(DbSyncLedger(metadata_session_factory), ConnectionClients(), owner="test", timeout=2.0)


def status(sync: CapacitySync, cluster: str) -> ClusterStatus:
    with sync.ledger.session_factory() as s:
        return StatusStore(s).all()[cluster]


def gpu_pod(name: str, gpus: int, seconds: float, node: str | None = None) -> dict:
    return {
        "metadata": {"name": name, "annotations": {"mcsched.io/duration-seconds": str(seconds)}},
        "spec": {
            **({"nodeName": node} if node else {}),
            "restartPolicy": "Never",
            "containers": [{"name": "base", "image": "x", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
    }


def test_first_sync_sees_every_cluster_healthy_with_all_gpus_free(sync: CapacitySync, fleet: VirtualFleet):
    outcomes = sync.sync_once()
    assert {o.cluster for o in outcomes} == {c.name for c in fleet.spec.clusters}
    assert all(o.synced and o.healthy for o in outcomes)
    for profile in fleet.spec.clusters:
        st = status(sync, profile.name)
        assert st.healthy and st.free_gpus == profile.total_gpus
        assert len(st.observation.nodes) == sum(p.nodes for p in profile.node_pools)


def test_sync_reflects_pods_starting_and_finishing(sync: CapacitySync, fleet: VirtualFleet):
    api = fleet.cluster("onprem-a100").core_v1()
    api.create_namespaced_pod("default", gpu_pod("train", 6, seconds=1.5))
    wait_for(lambda: api.read_namespaced_pod("train", "default").status.phase == "Running", what="pod running")
    sync.sync_once(["onprem-a100"])
    assert status(sync, "onprem-a100").free_gpus == 16 - 6
    assert status(sync, "onprem-a100").observation.pods_running == 1
    wait_for(lambda: api.read_namespaced_pod("train", "default").status.phase == "Succeeded", what="pod done")
    sync.sync_once(["onprem-a100"])
    assert status(sync, "onprem-a100").free_gpus == 16


def test_two_half_used_nodes_leave_no_node_for_an_eight_gpu_pod(sync: CapacitySync, fleet: VirtualFleet):
    api = fleet.cluster("onprem-a100").core_v1()
    a100_nodes = [n.metadata.name for n in api.list_node(label_selector="mcsched.io/node-pool=a100-ib").items]
    for i, node in enumerate(a100_nodes):  # bound by name, as a scheduler that spreads would have done
        api.create_namespaced_pod("default", gpu_pod(f"half-{i}", 4, seconds=30, node=node))
    wait_for(lambda: all(p.spec.node_name for p in api.list_namespaced_pod("default").items), what="both bound")
    sync.sync_once(["onprem-a100"])
    gpu_nodes = [n for n in status(sync, "onprem-a100").observation.nodes if n.gpus]
    assert sorted(n.whole_gpus_free for n in gpu_nodes) == [4, 4]  # 8 free in all, never 8 on one node


def test_node_not_ready_is_not_usable_capacity(sync: CapacitySync, fleet: VirtualFleet):
    handle = fleet.cluster("baremetal-t4")
    node = handle.core_v1().list_node().items[0].metadata.name
    handle.set_node_ready(node, False)
    sync.sync_once(["baremetal-t4"])
    st = status(sync, "baremetal-t4")
    assert st.summary()["nodes_not_ready"] == 1
    assert st.free_gpus == 12 - 4


def test_dead_cluster_is_marked_unhealthy_with_its_error_and_recovers(sync: CapacitySync, fleet: VirtualFleet):
    sync.sync_once(["cloud-h100"])
    fleet.cluster("cloud-h100").set_fault(unavailable=True)
    [outcome] = sync.sync_once(["cloud-h100"])
    st = status(sync, "cloud-h100")
    assert not outcome.healthy and not st.healthy
    assert st.error and "503" in st.error
    assert st.consecutive_failures == 1
    assert st.observation is not None  # the last good read is kept, aged, never silently dropped
    fleet.cluster("cloud-h100").clear_faults()
    sync.sync_once(["cloud-h100"])
    assert status(sync, "cloud-h100").healthy and status(sync, "cloud-h100").consecutive_failures == 0


def test_a_cluster_whose_port_is_closed_fails_within_the_timeout(sync: CapacitySync, fleet: VirtualFleet):
    fleet.cluster("cloud-h100").set_fault(refuse_seconds=5)
    [outcome] = sync.sync_once(["cloud-h100"])
    assert not outcome.healthy and outcome.seconds < 5
    assert status(sync, "cloud-h100").error


def test_only_one_syncer_holds_a_cluster_lease(sync: CapacitySync, metadata_session_factory):
    other = CapacitySync(DbSyncLedger(metadata_session_factory), ConnectionClients(), owner="replica-2")
    mine = sync.sync_once(["onprem-a100"])
    theirs = other.sync_once(["onprem-a100"])
    assert mine[0].synced and not theirs[0].synced


def test_our_pods_count_where_the_cluster_put_them_or_not_yet(
    sync: CapacitySync, fleet: VirtualFleet, metadata_session_factory
):
    """The whole path, as two Celery workers met it: two 4-GPU steps granted the two 4-GPU L4 nodes
    of cloud-h100, a on node 0 and b on node 1. The pods name the pool, so the cluster's scheduler
    chooses their nodes: b's pod went to node 0, and a's pod waits for a node (here: a selector no
    node matches). The read shows node 0 busy and node 1 free. A third step must wait: a still holds
    4 GPUs of the pool, though neither its node nor the read counts them."""
    from datetime import UTC, datetime

    from airflow_mcsched.decision import Policy
    from airflow_mcsched.service.placement_store import PlacementStore
    from airflow_mcsched.service.schemas import PlacementState, PlacementSubmit

    def step(task: str) -> PlacementSubmit:
        ask = {"team": "nlp", "kind": "training", "gpus": 4, "gpu_types": ["NVIDIA-L4"]}
        return PlacementSubmit.model_validate({"task": {"dag_id": "d", "run_id": "r", "task_id": task}, "ask": ask})

    def place(task: str):
        with metadata_session_factory() as s:
            store = PlacementStore(s, Policy())
            row = store.submit(step(task), "test", datetime.now(UTC))
            store.run_cycle()
            out = store.out(row)
            s.commit()
            return out

    sync.sync_once()
    a, b = place("a"), place("b")
    assert {(p.cluster, p.pool) for p in (a, b)} == {("cloud-h100", "l4")} and a.nodes != b.nodes
    api = fleet.cluster("cloud-h100").core_v1()
    b_pod = gpu_pod("b", 4, seconds=60, node=a.nodes[0])
    b_pod["metadata"]["labels"] = {"mcsched.io/reservation": b.reservation_id}
    a_pod = gpu_pod("a", 4, seconds=60)
    a_pod["metadata"]["labels"] = {"mcsched.io/reservation": a.reservation_id}
    a_pod["spec"]["nodeSelector"] = {"mcsched.io/node-pool": "l4", "example.com/not-yet": "true"}
    api.create_namespaced_pod("default", b_pod)
    api.create_namespaced_pod("default", a_pod)
    wait_for(lambda: api.read_namespaced_pod("b", "default").status.phase == "Running", what="b running")
    sync.sync_once(["cloud-h100"])
    read = status(sync, "cloud-h100").observation
    assert (read.reservation_ids_seen, read.reservation_ids_waiting) == ({b.reservation_id}, {a.reservation_id})
    third = place("c")
    assert third.state is PlacementState.PENDING
    assert {(r.cluster, r.pool): r.reason for r in third.explanation.rejections}[("cloud-h100", "l4")] == (
        "InsufficientFreeGpus"
    )
