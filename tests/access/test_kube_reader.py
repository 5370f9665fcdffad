"""Folding raw node and pod objects into per-node capacity, as Kubernetes itself counts."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_mcsched.access.kube_reader import observe, pod_requests


def node(name: str, gpus: int = 8, pool: str = "a100", ready: bool = True, unschedulable: bool = False) -> dict:
    return {
        "metadata": {
            "name": name,
            "labels": {"mcsched.io/node-pool": pool, "nvidia.com/gpu.product": "A100"},
        },
        "spec": {"unschedulable": unschedulable},
        "status": {
            "allocatable": {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    node_name: str | None,
    gpus: int = 0,
    cpu: str = "1",
    mem: str = "1Gi",
    phase: str = "Running",
    **extra: Any,
) -> dict:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    return {
        "metadata": {
            "name": "p",
            "labels": extra.get("labels", {}),
            "annotations": extra.get("annotations", {}),
        },
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "base", "resources": {"requests": {"cpu": cpu, "memory": mem}, "limits": limits}}],
            "initContainers": extra.get("init", []),
        },
        "status": {"phase": phase},
    }


def test_two_nodes_with_four_free_gpus_each_do_not_offer_eight_on_one_node():
    obs = observe("c", [node("n1"), node("n2")], [pod("n1", gpus=4), pod("n2", gpus=4)])
    assert sum(n.whole_gpus_free for n in obs.nodes) == 8
    assert max(n.whole_gpus_free for n in obs.nodes) == 4


def test_terminated_pods_hold_nothing_and_pending_pods_are_counted():
    pods = [
        pod("n1", gpus=8, phase="Succeeded"),
        pod("n1", gpus=8, phase="Failed"),
        pod(None, gpus=2, phase="Pending"),
    ]
    obs = observe("c", [node("n1")], pods)
    assert obs.nodes[0].whole_gpus_free == 8
    assert (obs.pods_running, obs.pods_pending) == (0, 1)


def test_not_ready_and_cordoned_nodes_are_not_usable():
    obs = observe("c", [node("n1", ready=False), node("n2", unschedulable=True), node("n3")], [])
    assert [n.usable for n in obs.nodes] == [False, False, True]


def test_cpu_and_memory_requests_are_summed_per_node():
    obs = observe("c", [node("n1")], [pod("n1", cpu="500m", mem="512Mi"), pod("n1", cpu="2", mem="1Gi")])
    n = obs.nodes[0]
    assert (n.cpu_milli_requested, n.memory_mib_requested) == (2500, 1536)
    assert (n.cpu_milli_allocatable, n.memory_mib_allocatable) == (96000, 1024 * 1024)


def test_gpu_shares_pack_onto_as_few_gpus_as_possible():
    shares = [pod("n1", annotations={"mcsched.io/gpu-milli": m}) for m in ("500", "300", "500", "200")]
    obs = observe("c", [node("n1", gpus=2)], shares)
    assert obs.nodes[0].gpu_milli_free == (500, 0)  # 500+500 fill one GPU, 300+200 share the other


def test_largest_init_container_counts_when_larger_than_the_sum():
    init = [{"name": "i", "resources": {"requests": {"cpu": "8", "memory": "16Gi"}}}]
    assert pod_requests(pod("n1", cpu="1", mem="1Gi", init=init))[:2] == (8000, 16384)


def test_reservation_labels_of_live_pods_are_reported():
    pods = [
        pod("n1", labels={"mcsched.io/reservation": "r1"}),
        pod("n1", labels={"mcsched.io/reservation": "r2"}, phase="Succeeded"),
    ]
    obs = observe("c", [node("n1")], pods)
    assert (obs.reservation_ids_seen, obs.reservation_ids_waiting) == ({"r1"}, set())


def test_a_reservation_whose_pod_waits_for_a_node_is_not_seen_since_no_node_counts_it():
    """Seen means counted in the nodes' use: the engine then stops taking the reservation's capacity.
    A pod not yet bound counts on no node, so its reservation must not be seen, or its GPUs would be
    free to grant again (the over-commit a 4-run Celery test hit). A gang with one pod bound and one
    not is not seen either."""
    label = {"labels": {"mcsched.io/reservation": "waits"}}
    gang = {"labels": {"mcsched.io/reservation": "gang"}}
    pods = [pod(None, gpus=4, phase="Pending", **label), pod("n1", gpus=4, **gang), pod(None, gpus=4, **gang)]
    obs = observe("c", [node("n1")], pods)
    assert obs.nodes[0].whole_gpus_free == 4
    assert obs.reservation_ids_seen == set()
    assert obs.reservation_ids_waiting == {"waits", "gang"}


def test_pool_is_matched_by_gpu_type_when_the_node_lacks_our_label():
    from airflow_mcsched.access.profiles import ClusterProfile

    profile = ClusterProfile(name="c", node_pools=[{"name": "big", "gpu_type": "A100", "gpus_per_node": 8, "nodes": 1}])
    n = node("n1")
    del n["metadata"]["labels"]["mcsched.io/node-pool"]
    assert observe("c", [n], [], profile).nodes[0].pool == "big"


@pytest.mark.parametrize(("q", "expected"), [("100m", 100), ("2", 2000), ("1.5", 1500)])
def test_cpu_quantities(q: str, expected: int):
    assert pod_requests(pod("n1", cpu=q))[0] == expected
