"""The bin-packing scheduler, seen from a client: where pods go and why some wait."""

from __future__ import annotations

from pod_specs import condition, events_of, pod, wait_phase

from airflow_mcsched.virtual.fleet import wait_for


def _unschedulable(api, name: str):
    def check():
        p = api.read_namespaced_pod(name, "default")
        cond = condition(p, "PodScheduled")
        return p if cond and cond.status == "False" else None

    return wait_for(check, 5, what=f"{name} unschedulable")


def test_too_big_pod_stays_pending_with_unschedulable_reason(api):
    api.create_namespaced_pod("default", pod("giant", gpus=9))
    waiting = _unschedulable(api, "giant")
    cond = condition(waiting, "PodScheduled")
    assert waiting.status.phase == "Pending"
    assert cond.reason == "Unschedulable"
    assert cond.message == "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    assert waiting.spec.node_name is None


def test_unschedulable_pod_gets_a_failed_scheduling_event(api):
    api.create_namespaced_pod("default", pod("giant", gpus=9))
    _unschedulable(api, "giant")
    event = next(e for e in events_of(api, "giant") if e.reason == "FailedScheduling")
    assert event.type == "Warning"
    assert event.source.component == "default-scheduler"
    assert event.message == "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."


def test_reasons_are_counted_per_node(api):
    api.create_namespaced_pod("default", pod("big-cpu", cpu="100", gpus=1))
    cond = condition(_unschedulable(api, "big-cpu"), "PodScheduled")
    # every node lacks CPU, the CPU nodes also lack GPUs; reasons sort as strings, as in kube-scheduler
    assert cond.message == "0/4 nodes are available: 2 Insufficient nvidia.com/gpu, 4 Insufficient cpu."


def test_pending_pod_is_scheduled_when_capacity_frees(api):
    api.create_namespaced_pod("default", pod("first", gpus=8, duration=60))
    api.create_namespaced_pod("default", pod("second", gpus=8, duration=60))
    api.create_namespaced_pod("default", pod("third", gpus=8, duration=0.1))
    _unschedulable(api, "third")
    api.delete_namespaced_pod("first", "default", grace_period_seconds=0)
    done = wait_phase(api, "third", "Succeeded")
    assert condition(done, "PodScheduled").status == "True"


def test_gpus_of_one_pod_come_from_one_node(api):
    api.create_namespaced_pod("default", pod("six", gpus=6, duration=60))
    wait_phase(api, "six", "Running")
    api.create_namespaced_pod("default", pod("four", gpus=4, duration=60))
    four = wait_phase(api, "four", "Running")
    six = api.read_namespaced_pod("six", "default")
    assert four.spec.node_name != six.spec.node_name  # 2 left on six's node: not enough


def test_best_fit_packs_the_fuller_node(api):
    api.create_namespaced_pod("default", pod("a", gpus=4, duration=60))
    a = wait_phase(api, "a", "Running")
    api.create_namespaced_pod("default", pod("b", gpus=2, duration=60))
    assert wait_phase(api, "b", "Running").spec.node_name == a.spec.node_name


def test_cpu_only_pods_go_to_cpu_nodes(api):
    api.create_namespaced_pod("default", pod("etl", cpu="2", duration=0.1))
    assert wait_phase(api, "etl", ("Running", "Succeeded")).spec.node_name.startswith("onprem-a100-cpu-")


def test_node_selector_is_honoured(api):
    api.create_namespaced_pod(
        "default", pod("pinned", duration=0.1, node_selector={"kubernetes.io/hostname": "onprem-a100-a100-ib-1"})
    )
    assert wait_phase(api, "pinned", ("Running", "Succeeded")).spec.node_name == "onprem-a100-a100-ib-1"


def test_unmatched_node_selector_says_so(api):
    api.create_namespaced_pod("default", pod("h100", gpus=1, node_selector={"nvidia.com/gpu.product": "H100"}))
    cond = condition(_unschedulable(api, "h100"), "PodScheduled")
    assert cond.message == "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector."


def test_required_node_affinity_is_honoured(api):
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "mcsched.io/node-pool", "operator": "In", "values": ["cpu"]}]}
                ]
            }
        }
    }
    api.create_namespaced_pod("default", pod("aff", duration=0.1, affinity=affinity))
    assert wait_phase(api, "aff", ("Running", "Succeeded")).spec.node_name.startswith("onprem-a100-cpu-")


def _preferring(node: str, weight: int = 100) -> dict:
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {
        "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "preference": term}]}
    }


def test_a_preferred_node_goes_before_best_fit_while_it_has_room(api):
    """Best fit alone would pack the second pod next to the first (see above); preferring the empty
    node sends it there. A preferred node without room is passed over, not waited for."""
    api.create_namespaced_pod("default", pod("a", gpus=4, duration=60))
    a = wait_phase(api, "a", "Running").spec.node_name
    other = next(n for n in ("onprem-a100-a100-ib-0", "onprem-a100-a100-ib-1") if n != a)
    api.create_namespaced_pod("default", pod("b", gpus=2, duration=60, affinity=_preferring(other)))
    assert wait_phase(api, "b", "Running").spec.node_name == other
    api.create_namespaced_pod("default", pod("c", gpus=5, duration=60, affinity=_preferring(a)))
    assert wait_phase(api, "c", "Running").spec.node_name == other  # 4 left on a's node


def test_cordoned_node_takes_no_new_pods(api, a100):
    for node in ("onprem-a100-a100-ib-0", "onprem-a100-a100-ib-1"):
        a100.cordon(node)
    api.create_namespaced_pod("default", pod("blocked", gpus=1))
    cond = condition(_unschedulable(api, "blocked"), "PodScheduled")
    assert cond.message == "0/4 nodes are available: 2 Insufficient nvidia.com/gpu, 2 node(s) were unschedulable."
    a100.cordon("onprem-a100-a100-ib-1", cordoned=False)
    assert wait_phase(api, "blocked", "Running").spec.node_name == "onprem-a100-a100-ib-1"


def test_cordon_through_a_node_patch(api):
    api.patch_node("onprem-a100-cpu-0", {"spec": {"unschedulable": True}})
    node = api.read_node("onprem-a100-cpu-0")
    assert node.spec.unschedulable is True
    assert any(t.key == "node.kubernetes.io/unschedulable" for t in node.spec.taints)


def test_fractional_gpus_share_one_gpu(t4):
    api = t4.core_v1()
    for i in range(4):
        api.create_namespaced_pod(
            "default", pod(f"infer-{i}", duration=60, annotations={"mcsched.io/gpu-milli": "500"})
        )
    for i in range(4):
        wait_phase(api, f"infer-{i}", "Running")
    nodes = {api.read_namespaced_pod(f"infer-{i}", "default").spec.node_name for i in range(4)}
    assert len(nodes) == 1  # best fit: all halves on the same node
    node = next(n for n in t4.summary()["nodes"] if n["name"] in nodes)
    assert sorted(node["gpu_milli_free"]) == [0, 0, 1000, 1000]


def test_fractional_share_on_a_node_without_sharing_takes_a_whole_gpu(a100):
    api = a100.core_v1()
    api.create_namespaced_pod("default", pod("half", gpus=1, duration=60, annotations={"mcsched.io/gpu-milli": "500"}))
    wait_phase(api, "half", "Running")
    assert a100.summary()["gpus_free"] == 15


def test_pod_created_with_node_name_skips_the_scheduler(api):
    api.create_namespaced_pod("default", pod("bound", duration=0.1, nodeName="onprem-a100-cpu-1"))
    done = wait_phase(api, "bound", "Succeeded")
    assert done.spec.node_name == "onprem-a100-cpu-1"
    assert not [e for e in events_of(api, "bound") if e.reason == "Scheduled"]


def test_higher_priority_pod_is_scheduled_first(api, a100):
    api.create_namespaced_pod("default", pod("holder-0", gpus=8, duration=60))
    api.create_namespaced_pod("default", pod("holder-1", gpus=8, duration=60))
    wait_phase(api, "holder-1", "Running")
    api.create_namespaced_pod("default", pod("low", gpus=8, duration=60))
    api.create_namespaced_pod("default", pod("high", gpus=8, duration=60, priority=1000))
    _unschedulable(api, "high")
    api.delete_namespaced_pod("holder-0", "default", grace_period_seconds=0)
    wait_phase(api, "high", "Running")
    assert api.read_namespaced_pod("low", "default").status.phase == "Pending"


def test_a_pod_pinned_to_its_reserved_node_waits_for_it_where_a_preferring_one_goes_elsewhere(api):
    """The affinities the operator gives a step (operators/pod_shape.py): preferring its reserved
    node, it runs on another node of the pool when that one is full; pinned, it waits for it."""
    from kubernetes.client import ApiClient

    from airflow_mcsched.operators.pod_shape import preferring_nodes, requiring_nodes

    api.create_namespaced_pod("default", pod("a", gpus=6, duration=60))
    a = wait_phase(api, "a", "Running").spec.node_name
    other = next(n for n in ("onprem-a100-a100-ib-0", "onprem-a100-a100-ib-1") if n != a)
    as_sent = ApiClient().sanitize_for_serialization
    api.create_namespaced_pod(
        "default", pod("pinned", gpus=4, duration=60, affinity=as_sent(requiring_nodes(None, [a])))
    )
    api.create_namespaced_pod(
        "default", pod("preferring", gpus=4, duration=60, affinity=as_sent(preferring_nodes(None, [a])))
    )
    assert wait_phase(api, "preferring", "Running").spec.node_name == other
    cond = condition(_unschedulable(api, "pinned"), "PodScheduled")
    assert cond.message == (
        "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3 node(s) didn't match Pod's node affinity/selector."
    )
    api.delete_namespaced_pod("a", "default", grace_period_seconds=0)
    assert wait_phase(api, "pinned", "Running").spec.node_name == a
