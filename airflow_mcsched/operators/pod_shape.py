"""What the pod must say so that it runs on what was reserved, and the capacity sync recognises it.

Resources match the ask (whole GPUs as `nvidia.com/gpu`, a share as the gpu-milli annotation),
the node selector pins the pool, and the reservation label lets the sync renew the lease on sight.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client import models as k8s

from airflow_mcsched.access.capacity import ANNOTATION_GPU_MILLI, LABEL_NODE_POOL, MILLI_PER_GPU, RESOURCE_GPU
from airflow_mcsched.access.kube_reader import LABEL_RESERVATION
from airflow_mcsched.service.schemas import PlacementOut, ResourceAsk

ANNOTATION_PLACEMENT = "mcsched.io/placement-id"


@dataclass(frozen=True)
class PodShape:
    resources: k8s.V1ResourceRequirements
    node_selector: dict[str, str]
    labels: dict[str, str]
    annotations: dict[str, str]


def gpu_split(ask: ResourceAsk) -> tuple[int, int]:
    """(whole GPUs, share in milli) as the engine reads the ask: `gpus=1, gpu_milli=460` is a share."""
    if 0 < ask.gpu_milli < MILLI_PER_GPU:
        return 0, ask.gpu_milli
    if ask.gpu_milli >= MILLI_PER_GPU:
        return max(ask.gpus, ask.gpu_milli // MILLI_PER_GPU), 0
    return ask.gpus, 0


def _quantities(ask: ResourceAsk) -> dict[str, str]:
    return {"cpu": f"{round(ask.cpu * 1000)}m", "memory": f"{round(ask.memory_gib * 1024)}Mi"}


def _as_dicts(authored: k8s.V1ResourceRequirements | Mapping[str, Any] | None) -> tuple[dict, dict]:
    if authored is None:
        return {}, {}
    if isinstance(authored, k8s.V1ResourceRequirements):
        return dict(authored.limits or {}), dict(authored.requests or {})
    return dict(authored.get("limits") or {}), dict(authored.get("requests") or {})


def container_resources(
    ask: ResourceAsk, authored: k8s.V1ResourceRequirements | Mapping[str, Any] | None = None
) -> k8s.V1ResourceRequirements:
    """The ask's CPU, memory and GPUs over whatever else the author set (e.g. ephemeral storage)."""
    limits, requests = _as_dicts(authored)
    whole, _ = gpu_split(ask)
    ours = _quantities(ask)
    limits.update(ours)
    requests.update(ours)
    limits.pop(RESOURCE_GPU, None)
    requests.pop(RESOURCE_GPU, None)
    if whole:
        limits[RESOURCE_GPU] = str(whole)
    return k8s.V1ResourceRequirements(limits=limits, requests=requests)


def pod_shape(
    placement: PlacementOut, authored_resources: k8s.V1ResourceRequirements | Mapping[str, Any] | None = None
) -> PodShape:
    _, share = gpu_split(placement.ask)
    annotations = {ANNOTATION_PLACEMENT: placement.id}
    if share:
        annotations[ANNOTATION_GPU_MILLI] = str(share)
    return PodShape(
        resources=container_resources(placement.ask, authored_resources),
        node_selector={LABEL_NODE_POOL: placement.pool or ""},
        labels={LABEL_RESERVATION: placement.reservation_id or ""},
        annotations=annotations,
    )
