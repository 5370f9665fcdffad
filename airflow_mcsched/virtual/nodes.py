"""Node objects built from a cluster profile: one per node of each pool, labelled like real GPU nodes.

Labels follow what GPU feature discovery, node feature discovery and cloud providers set, plus
ours (pool, cluster, failure domain), so placement code reads virtual and real nodes alike.
"""

from __future__ import annotations

import uuid
from typing import Any

from airflow_mcsched.access.profiles import ClusterProfile, NodePool
from airflow_mcsched.virtual import names
from airflow_mcsched.virtual.quantities import format_bytes
from airflow_mcsched.virtual.vocabulary import (
    ANNOTATION_PRICE,
    ANNOTATION_SPOT_PRICE,
    LABEL_CLUSTER,
    LABEL_FAILURE_DOMAIN,
    LABEL_GPU_COUNT,
    LABEL_GPU_MEMORY,
    LABEL_GPU_PRODUCT,
    LABEL_GPU_SHARING,
    LABEL_INTERCONNECT_PREFIX,
    LABEL_NODE_POOL,
    LABEL_RDMA,
    LABEL_REGION,
    LABEL_ZONE,
    RESOURCE_GPU,
)

TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
KUBELET_VERSION = "v1.36.0"


def node_name(cluster: str, pool: str, index: int) -> str:
    return f"{cluster}-{pool}-{index}"


def node_labels(profile: ClusterProfile, pool: NodePool, name: str) -> dict[str, str]:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        LABEL_CLUSTER: profile.name,
        LABEL_NODE_POOL: pool.name,
        LABEL_ZONE: names.safe_label_value(profile.zone),
        LABEL_REGION: names.safe_label_value(profile.region),
        LABEL_FAILURE_DOMAIN: names.safe_label_value(profile.domain),
    }
    if pool.gpu_type:
        labels[LABEL_GPU_PRODUCT] = pool.gpu_type
        labels[LABEL_GPU_COUNT] = str(pool.gpus_per_node)
        labels["nvidia.com/gpu.present"] = "true"
        if pool.gpu_memory_gib:
            labels[LABEL_GPU_MEMORY] = str(int(pool.gpu_memory_gib * 1024))
        if pool.gpu_sharing:
            labels[LABEL_GPU_SHARING] = "time-slicing"
    for link in pool.interconnect:
        labels[LABEL_INTERCONNECT_PREFIX + link.value] = "true"
    if pool.has_rdma:
        labels[LABEL_RDMA] = "true"
    labels.update(pool.labels)
    for key, value in labels.items():
        problems = names.qualified_name(key) + names.label_value(value)
        if problems:
            raise ValueError(f"cluster {profile.name!r} pool {pool.name!r}: node label {key}={value!r}: {problems[0]}")
    return labels


def build_nodes(profile: ClusterProfile, created: str, cluster_index: int = 0) -> list[dict[str, Any]]:
    """All node objects of a cluster, Ready and schedulable."""
    nodes = []
    count = 0
    for pool in profile.node_pools:
        for i in range(pool.nodes):
            name = node_name(profile.name, pool.name, i)
            capacity = {
                "cpu": f"{round(pool.cpu_per_node * 1000)}m"
                if pool.cpu_per_node != int(pool.cpu_per_node)
                else str(int(pool.cpu_per_node)),
                "memory": format_bytes(int(pool.memory_gib_per_node * 2**30)),
                "pods": "110",
                "ephemeral-storage": "500Gi",
                "hugepages-1Gi": "0",
                "hugepages-2Mi": "0",
            }
            if pool.gpus_per_node:
                capacity[RESOURCE_GPU] = str(pool.gpus_per_node)
            annotations = {"node.alpha.kubernetes.io/ttl": "0"}
            if pool.gpu_type:
                annotations[ANNOTATION_PRICE] = f"{pool.price_per_gpu_hour:g}"
                if pool.spot_price_per_gpu_hour is not None:
                    annotations[ANNOTATION_SPOT_PRICE] = f"{pool.spot_price_per_gpu_hour:g}"
            nodes.append(
                {
                    "kind": "Node",
                    "apiVersion": "v1",
                    "metadata": {
                        "name": name,
                        "uid": str(uuid.uuid4()),
                        "creationTimestamp": created,
                        "labels": node_labels(profile, pool, name),
                        "annotations": annotations,
                    },
                    "spec": {"podCIDR": f"10.{100 + cluster_index}.{count}.0/24"},
                    "status": {
                        "capacity": capacity,
                        "allocatable": dict(capacity),
                        "conditions": _conditions(ready=True, now=created),
                        "addresses": [
                            {"type": "InternalIP", "address": f"192.168.{cluster_index}.{10 + count}"},
                            {"type": "Hostname", "address": name},
                        ],
                        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                        "nodeInfo": {
                            "machineID": uuid.uuid4().hex,
                            "systemUUID": str(uuid.uuid4()),
                            "bootID": str(uuid.uuid4()),
                            "kernelVersion": "6.8.0-mcsched",
                            "osImage": "mcsched virtual node",
                            "containerRuntimeVersion": "mcsched-virtual://0.1.0",
                            "kubeletVersion": KUBELET_VERSION,
                            "kubeProxyVersion": "",
                            "operatingSystem": "linux",
                            "architecture": "amd64",
                        },
                    },
                }
            )
            count += 1
    return nodes


def node_ip(node: dict[str, Any]) -> str:
    return next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")


def _conditions(ready: bool, now: str) -> list[dict[str, Any]]:
    def cond(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
        return {
            "type": kind,
            "status": status,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }

    return [
        cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        cond("Ready", "True", "KubeletReady", "kubelet is posting ready status")
        if ready
        else cond("Ready", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."),
    ]


def is_ready(node: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))


def set_ready(node: dict[str, Any], ready: bool, now: str) -> None:
    """Flip the Ready condition and the not-ready taints, as the node lifecycle controller does."""
    node["status"]["conditions"] = _conditions(ready, now)
    _set_taint(node, TAINT_NOT_READY, "NoSchedule", not ready, now)
    _set_taint(node, TAINT_NOT_READY, "NoExecute", not ready, now)


def set_unschedulable(node: dict[str, Any], unschedulable: bool, now: str) -> None:
    """Cordon or uncordon: `spec.unschedulable` plus its NoSchedule taint."""
    if unschedulable:
        node["spec"]["unschedulable"] = True
    else:
        node["spec"].pop("unschedulable", None)
    _set_taint(node, TAINT_UNSCHEDULABLE, "NoSchedule", unschedulable, now)


def sync_unschedulable_taint(node: dict[str, Any], now: str) -> None:
    _set_taint(node, TAINT_UNSCHEDULABLE, "NoSchedule", bool(node["spec"].get("unschedulable")), now)


def _set_taint(node: dict[str, Any], key: str, effect: str, present: bool, now: str) -> None:
    taints = [t for t in node["spec"].get("taints", []) if not (t["key"] == key and t["effect"] == effect)]
    if present:
        taint: dict[str, Any] = {"key": key, "effect": effect}
        if effect == "NoExecute":
            taint["timeAdded"] = now
        taints.append(taint)
    if taints:
        node["spec"]["taints"] = taints
    else:
        node["spec"].pop("taints", None)
