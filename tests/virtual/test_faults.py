"""Faults switched on from a test: errors, unavailability, latency, refused connections, node loss."""

from __future__ import annotations

import time

import pytest
import urllib3
from kubernetes.client.rest import ApiException
from pod_specs import condition, pod, wait_phase

from airflow_mcsched.virtual.fleet import wait_for


def test_error_rate_one_answers_500(a100, api):
    a100.set_fault(error_rate=1.0)
    with pytest.raises(ApiException) as err:
        api.list_node()
    assert err.value.status == 500
    a100.clear_faults()
    assert api.list_node().items


def test_error_rate_is_a_fraction_of_requests(a100, api):
    a100.set_fault(error_rate=0.5)
    failures = 0
    for _ in range(60):
        try:
            api.list_namespace()
        except ApiException:
            failures += 1
    assert 15 < failures < 45


def test_unavailable_answers_503_and_admin_still_works(a100, api):
    a100.set_fault(unavailable=True)
    with pytest.raises(ApiException) as err:
        api.read_namespace("default")
    assert err.value.status == 503
    assert a100.summary()["faults"]["unavailable"] is True


def test_latency_slows_every_answer(a100, api):
    a100.set_fault(latency_seconds=0.3)
    start = time.monotonic()
    api.list_node()
    assert time.monotonic() - start >= 0.3


def test_refused_connections_then_recovery(a100):
    api = a100.core_v1()
    api.api_client.configuration.retries = False
    a100.refuse_connections()
    with pytest.raises(urllib3.exceptions.HTTPError):
        api.list_node(_request_timeout=2)
    a100.clear_faults()
    fresh = a100.core_v1()
    assert fresh.list_node().items


def test_refuse_for_a_while_over_http(fleet_spec):
    from airflow_mcsched.virtual.fleet import VirtualFleet

    with VirtualFleet.start(fleet_spec, only=["cloud-h100"], mode="process") as fleet:
        h100 = fleet.cluster("cloud-h100")
        h100.set_fault(refuse_seconds=1.0)
        time.sleep(0.3)
        api = h100.core_v1()
        api.api_client.configuration.retries = False
        with pytest.raises(urllib3.exceptions.HTTPError):
            api.list_node()
        time.sleep(1.0)
        assert h100.core_v1().list_node().items


def test_node_not_ready_fails_its_running_pods(a100, api):
    api.create_namespaced_pod("default", pod("victim", gpus=8, duration=60))
    node = wait_phase(api, "victim", "Running").spec.node_name
    a100.set_node_ready(node, False)
    failed = wait_phase(api, "victim", "Failed")
    assert failed.status.reason == "NodeLost"
    assert failed.status.container_statuses[0].state.terminated.reason == "ContainerStatusUnknown"
    ready = next(c for c in api.read_node(node).status.conditions if c.type == "Ready")
    assert ready.status == "Unknown"


def test_node_not_ready_takes_no_new_pods(a100, api):
    a100.set_node_ready("onprem-a100-a100-ib-0", False)
    api.create_namespaced_pod("default", pod("elsewhere", gpus=1, duration=60))
    assert wait_phase(api, "elsewhere", "Running").spec.node_name == "onprem-a100-a100-ib-1"


def test_node_not_ready_with_keep_lets_pods_finish(a100, api):
    api.create_namespaced_pod("default", pod("survivor", gpus=8, duration=0.5))
    node = wait_phase(api, "survivor", "Running").spec.node_name
    a100.set_node_ready(node, False, running_pods="keep")
    assert wait_phase(api, "survivor", "Succeeded").status.phase == "Succeeded"


def test_not_ready_nodes_are_named_in_the_scheduling_message(a100, api):
    for node in ("onprem-a100-a100-ib-0", "onprem-a100-a100-ib-1"):
        a100.set_node_ready(node, False)
    api.create_namespaced_pod("default", pod("stuck", gpus=1))

    def message():
        cond = condition(api.read_namespaced_pod("stuck", "default"), "PodScheduled")
        return cond.message if cond else None

    assert wait_for(message, 5) == (
        "0/4 nodes are available: 2 Insufficient nvidia.com/gpu, "
        "2 node(s) had untolerated taint {node.kubernetes.io/not-ready: }."
    )
    a100.set_node_ready("onprem-a100-a100-ib-0", True)
    assert wait_phase(api, "stuck", "Running").spec.node_name == "onprem-a100-a100-ib-0"
