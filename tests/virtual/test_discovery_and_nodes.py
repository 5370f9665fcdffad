"""Discovery and nodes, read through the real `kubernetes` client."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from airflow_mcsched.access.capacity import (
    LABEL_FAILURE_DOMAIN,
    LABEL_GPU_PRODUCT,
    LABEL_NODE_POOL,
    LABEL_REGION,
    LABEL_ZONE,
    RESOURCE_GPU,
)


def test_version_and_api_discovery(a100):
    api_client = a100.core_v1().api_client
    assert client.VersionApi(api_client).get_code().git_version.startswith("v1.")
    assert client.CoreApi(api_client).get_api_versions().versions == ["v1"]
    resources = {r.name for r in client.CoreV1Api(api_client).get_api_resources().resources}
    assert {"pods", "pods/log", "nodes", "namespaces", "events"} <= resources


def test_nodes_carry_gpu_pool_and_topology_labels(api):
    nodes = {n.metadata.name: n for n in api.list_node().items}
    gpu_node = nodes["onprem-a100-a100-ib-0"]
    labels = gpu_node.metadata.labels
    assert labels[LABEL_GPU_PRODUCT] == "NVIDIA-A100-SXM4-80GB"
    assert labels[LABEL_NODE_POOL] == "a100-ib"
    assert labels[LABEL_ZONE] == "fra-dc1"
    assert labels[LABEL_REGION] == "eu-central"
    assert labels[LABEL_FAILURE_DOMAIN] == "eu-central.fra-dc1"
    assert labels["mcsched.io/interconnect.infiniband"] == "true"
    assert labels["feature.node.kubernetes.io/rdma.available"] == "true"


def test_node_allocatable_and_capacity(api):
    node = api.read_node("onprem-a100-a100-ib-1")
    assert node.status.allocatable[RESOURCE_GPU] == "8"
    assert node.status.capacity["cpu"] == "96"
    assert node.status.allocatable["memory"] == "1Ti"
    assert node.status.allocatable["pods"] == "110"
    ready = next(c for c in node.status.conditions if c.type == "Ready")
    assert ready.status == "True"
    assert not node.spec.unschedulable


def test_cpu_pool_nodes_have_no_gpus(api):
    node = api.read_node("onprem-a100-cpu-0")
    assert RESOURCE_GPU not in node.status.allocatable
    assert LABEL_GPU_PRODUCT not in node.metadata.labels


def test_list_nodes_by_label_selector(api):
    gpu_nodes = api.list_node(label_selector=f"{LABEL_GPU_PRODUCT}=NVIDIA-A100-SXM4-80GB").items
    assert sorted(n.metadata.name for n in gpu_nodes) == ["onprem-a100-a100-ib-0", "onprem-a100-a100-ib-1"]
    cpu_nodes = api.list_node(label_selector=f"!{LABEL_GPU_PRODUCT}").items
    assert sorted(n.metadata.name for n in cpu_nodes) == ["onprem-a100-cpu-0", "onprem-a100-cpu-1"]


def test_list_nodes_by_field_selector(api):
    assert [n.metadata.name for n in api.list_node(field_selector="metadata.name=onprem-a100-cpu-1").items] == [
        "onprem-a100-cpu-1"
    ]


def test_lists_have_kind_and_resource_version(api):
    listing = api.list_node(_preload_content=False)
    import json

    body = json.loads(listing.data)
    assert body["kind"] == "NodeList"
    assert int(body["metadata"]["resourceVersion"]) > 0


def test_missing_node_is_404(api):
    with pytest.raises(ApiException) as err:
        api.read_node("no-such-node")
    assert err.value.status == 404


def test_every_example_cluster_serves_its_pools(fleet):
    counts = {h.name: len(h.core_v1().list_node().items) for h in fleet}
    assert counts == {"onprem-a100": 4, "cloud-h100": 3, "baremetal-t4": 3}


def test_namespaces_list_get_create(api):
    names = {n.metadata.name for n in api.list_namespace().items}
    assert {"default", "kube-system"} <= names
    api.create_namespace({"metadata": {"name": "team-a"}})
    assert api.read_namespace("team-a").status.phase == "Active"
    with pytest.raises(ApiException) as err:
        api.create_namespace({"metadata": {"name": "team-a"}})
    assert err.value.status == 409
