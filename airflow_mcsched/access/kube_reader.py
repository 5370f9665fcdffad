"""Read one cluster's capacity through its Kubernetes API: nodes, the pods bound to them, health.

Lists come back as raw JSON (`_preload_content=False`): building the client's model objects for
thousands of pods costs far more than the request itself. `observe` is pure, so it is tested and
benchmarked without a cluster.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from kubernetes.utils.quantity import parse_quantity

from airflow_mcsched.access.capacity import (
    ANNOTATION_GPU_MILLI,
    LABEL_GPU_PRODUCT,
    LABEL_NODE_POOL,
    MILLI_PER_GPU,
    RESOURCE_GPU,
    ClusterObservation,
    NodeObservation,
)
from airflow_mcsched.access.profiles import ClusterProfile

LABEL_RESERVATION = "mcsched.io/reservation"
_TERMINAL = frozenset({"Succeeded", "Failed"})
_MIB = 1024 * 1024


def _cpu_milli(q: str | None) -> int:
    return int(parse_quantity(q) * 1000) if q else 0


def _mib(q: str | None) -> int:
    return int(parse_quantity(q) / _MIB) if q else 0


def _gpus(q: str | None) -> int:
    return int(parse_quantity(q)) if q else 0


def _container_requests(container: Mapping[str, Any]) -> dict[str, str]:
    res = container.get("resources") or {}
    # Extended resources (GPUs) are usually given as limits only; Kubernetes copies them to requests.
    return {**(res.get("limits") or {}), **(res.get("requests") or {})}


def pod_requests(pod: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(cpu milli, memory MiB, whole GPUs, GPU share milli) a pod holds on its node, as Kubernetes counts:
    the sum over containers, or the largest init container when that is larger."""
    spec = pod.get("spec") or {}
    totals = [0, 0, 0]
    for c in spec.get("containers") or []:
        r = _container_requests(c)
        totals[0] += _cpu_milli(r.get("cpu"))
        totals[1] += _mib(r.get("memory"))
        totals[2] += _gpus(r.get(RESOURCE_GPU))
    for c in spec.get("initContainers") or []:
        r = _container_requests(c)
        totals[0] = max(totals[0], _cpu_milli(r.get("cpu")))
        totals[1] = max(totals[1], _mib(r.get("memory")))
        totals[2] = max(totals[2], _gpus(r.get(RESOURCE_GPU)))
    share = int(((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_GPU_MILLI, 0) or 0)
    if share >= MILLI_PER_GPU:  # a "share" of a whole GPU or more is whole GPUs
        totals[2] += share // MILLI_PER_GPU
        share %= MILLI_PER_GPU
    return totals[0], totals[1], totals[2], share


def _pack_gpus(gpus: int, whole: int, shares: Iterable[int]) -> tuple[int, ...]:
    """Free milli per GPU after placing whole GPUs, then shares best-fit (as a sharing plugin would)."""
    free = [MILLI_PER_GPU] * gpus
    for i in range(min(whole, gpus)):
        free[i] = 0
    for share in sorted(shares, reverse=True):
        fits = [i for i, f in enumerate(free) if f >= share]
        if fits:
            best = min(fits, key=lambda i: free[i])
            free[best] -= share
    return tuple(sorted(free, reverse=True))


def _pool_of(labels: Mapping[str, str], profile: ClusterProfile | None) -> str | None:
    pool = labels.get(LABEL_NODE_POOL)
    if pool or profile is None:
        return pool
    product = labels.get(LABEL_GPU_PRODUCT)
    for p in profile.node_pools:  # a real cluster's nodes may lack our label: match by GPU type
        if p.gpu_type and p.gpu_type == product:
            return p.name
    return None


def _ready(node: Mapping[str, Any]) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def observe(
    cluster: str,
    nodes: list[Mapping[str, Any]],
    pods: list[Mapping[str, Any]],
    profile: ClusterProfile | None = None,
    now: datetime | None = None,
) -> ClusterObservation:
    """Fold raw node and pod objects into per-node capacity; terminated pods hold nothing."""
    used: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    shares: dict[str, list[int]] = defaultdict(list)
    running = pending = 0
    on_a_node: set[str] = set()
    waiting: set[str] = set()
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase")
        if phase in _TERMINAL:
            continue
        reservation = ((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_RESERVATION)
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            # no node counts it yet: were its reservation taken as seen, its GPUs would be free
            # twice over until the cluster's scheduler binds it (an over-commit)
            if reservation is not None:
                waiting.add(reservation)
            pending += 1
            continue
        if reservation is not None:
            on_a_node.add(reservation)
        running += phase == "Running"
        pending += phase == "Pending"
        cpu, mem, gpus, share = pod_requests(pod)
        u = used[node_name]
        u[0] += cpu
        u[1] += mem
        u[2] += gpus
        if share:
            shares[node_name].append(share)
    observed: list[NodeObservation] = []
    for node in nodes:
        meta = node.get("metadata") or {}
        name = meta.get("name", "")
        labels = meta.get("labels") or {}
        alloc = (node.get("status") or {}).get("allocatable") or {}
        u = used.get(name, [0, 0, 0])
        observed.append(
            NodeObservation(
                name=name,
                pool=_pool_of(labels, profile),
                gpu_type=labels.get(LABEL_GPU_PRODUCT),
                cpu_milli_allocatable=_cpu_milli(alloc.get("cpu")),
                memory_mib_allocatable=_mib(alloc.get("memory")),
                cpu_milli_requested=u[0],
                memory_mib_requested=u[1],
                gpu_milli_free=_pack_gpus(_gpus(alloc.get(RESOURCE_GPU)), u[2], shares.get(name, ())),
                ready=_ready(node),
                schedulable=not (node.get("spec") or {}).get("unschedulable", False),
                labels=dict(labels),
            )
        )
    return ClusterObservation(
        cluster=cluster,
        observed_at=now or datetime.now(UTC),
        nodes=tuple(observed),
        pods_running=running,
        pods_pending=pending,
        reservation_ids_seen=frozenset(on_a_node - waiting),  # a gang is seen once all its pods are
        reservation_ids_waiting=frozenset(waiting),
    )


def _get_json(api_client: Any, path: str, query: list[tuple[str, str]], timeout: float) -> dict[str, Any]:
    response = api_client.call_api(
        path,
        "GET",
        query_params=query,
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _request_timeout=timeout,
    )
    data = response[0].data if isinstance(response, tuple) else response.data
    return json.loads(data)


def read_cluster(api_client: Any, profile: ClusterProfile, timeout: float = 10.0) -> ClusterObservation:
    """List nodes and live pods of one cluster within `timeout` seconds per call; an error is kept,
    never raised, so one dead cluster cannot stop the sync of the others."""
    started = time.monotonic()
    try:
        nodes = _get_json(api_client, "/api/v1/nodes", [], timeout)
        pods = _get_json(
            api_client,
            "/api/v1/pods",
            [("fieldSelector", "status.phase!=Succeeded,status.phase!=Failed")],
            max(0.5, timeout - (time.monotonic() - started)),
        )
    except Exception as err:  # any failure to read is a fact about the cluster, kept as its error
        return ClusterObservation(
            cluster=profile.name, observed_at=datetime.now(UTC), error=f"{type(err).__name__}: {err}"[:2000]
        )
    return observe(profile.name, nodes.get("items") or [], pods.get("items") or [], profile)
