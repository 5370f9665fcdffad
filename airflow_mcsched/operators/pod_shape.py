"""What the pod must say so that it runs on what was reserved, and the capacity sync recognises it.

Resources match the ask (whole GPUs as `nvidia.com/gpu`, a share as the gpu-milli annotation),
the node selector pins the pool, and the reservation label lets the sync renew the lease on sight.

The node the engine chose is preferred, not required: kube-scheduler's default scoring spreads
pods over the emptiest nodes, which would break up the whole nodes the engine keeps free for
large pods, so the pod asks for its reserved node first (preferred node affinity, the highest
weight). Yet a read is seconds old, and when another workload took that node meanwhile, the pod
still runs on any node of its pool with room rather than waiting for that one (the engine then
counts its grant anywhere in the pool until the next read shows where it went).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow.providers.cncf.kubernetes.backcompat.backwards_compat_converters import convert_affinity
from kubernetes.client import models as k8s

from airflow_mcsched.access.capacity import ANNOTATION_GPU_MILLI, LABEL_NODE_POOL, MILLI_PER_GPU, RESOURCE_GPU
from airflow_mcsched.access.kube_reader import LABEL_RESERVATION
from airflow_mcsched.service.schemas import PlacementOut, ResourceAsk

ANNOTATION_PLACEMENT = "mcsched.io/placement-id"


NODE_NAME_FIELD = "metadata.name"
MAX_PREFERENCE_WEIGHT = 100


@dataclass(frozen=True)
class PodShape:
    resources: k8s.V1ResourceRequirements
    node_selector: dict[str, str]
    labels: dict[str, str]
    annotations: dict[str, str]
    affinity: k8s.V1Affinity


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


def preferring_nodes(authored: k8s.V1Affinity | Mapping[str, Any] | None, nodes: Sequence[str]) -> k8s.V1Affinity:
    """The author's affinity (left as it is) with these nodes preferred above anything else the author
    prefers: one term per node, since a node field selector takes one value."""
    affinity = _copy_affinity(authored)
    node_affinity = affinity.node_affinity or k8s.V1NodeAffinity()
    preferred = list(node_affinity.preferred_during_scheduling_ignored_during_execution or [])
    preferred += [
        k8s.V1PreferredSchedulingTerm(
            weight=MAX_PREFERENCE_WEIGHT,
            preference=k8s.V1NodeSelectorTerm(match_fields=[_named(node)]),
        )
        for node in dict.fromkeys(nodes)
    ]
    node_affinity.preferred_during_scheduling_ignored_during_execution = preferred or None
    affinity.node_affinity = node_affinity
    return affinity


def requiring_nodes(authored: k8s.V1Affinity | Mapping[str, Any] | None, nodes: Sequence[str]) -> k8s.V1Affinity:
    """The author's affinity with these nodes required: each of the author's required terms (terms
    are alternatives) becomes one term per node, the author's conditions and the node's name
    together (a node field selector takes one value). Nothing else of the author's changes."""
    affinity = _copy_affinity(authored)
    node_affinity = affinity.node_affinity or k8s.V1NodeAffinity()
    required = node_affinity.required_during_scheduling_ignored_during_execution
    authored_terms = (required.node_selector_terms if required else None) or [k8s.V1NodeSelectorTerm()]
    terms = [
        k8s.V1NodeSelectorTerm(
            match_expressions=term.match_expressions,
            match_fields=[*(term.match_fields or []), _named(node)],
        )
        for term in authored_terms
        for node in dict.fromkeys(nodes)
    ]
    node_affinity.required_during_scheduling_ignored_during_execution = k8s.V1NodeSelector(node_selector_terms=terms)
    affinity.node_affinity = node_affinity
    return affinity


def _named(node: str) -> k8s.V1NodeSelectorRequirement:
    """The node by its name: a node field selector takes one value, so a term names one node."""
    return k8s.V1NodeSelectorRequirement(key=NODE_NAME_FIELD, operator="In", values=[node])


def _copy_affinity(authored: k8s.V1Affinity | Mapping[str, Any] | None) -> k8s.V1Affinity:
    """A copy to add to: the operator keeps the author's own for the next placement attempt."""
    if not authored:
        return k8s.V1Affinity()
    if isinstance(authored, k8s.V1Affinity):
        return copy.deepcopy(authored)
    return convert_affinity(dict(authored))


def pod_shape(
    placement: PlacementOut,
    authored_resources: k8s.V1ResourceRequirements | Mapping[str, Any] | None = None,
    authored_affinity: k8s.V1Affinity | Mapping[str, Any] | None = None,
    *,
    pin_to_nodes: bool = False,
) -> PodShape:
    """The pod for a placement: its pool required, its reserved nodes preferred (`preferring_nodes`)
    or, with `pin_to_nodes`, required (`requiring_nodes`)."""
    _, share = gpu_split(placement.ask)
    annotations = {ANNOTATION_PLACEMENT: placement.id}
    if share:
        annotations[ANNOTATION_GPU_MILLI] = str(share)
    return PodShape(
        resources=container_resources(placement.ask, authored_resources),
        node_selector={LABEL_NODE_POOL: placement.pool or ""},
        labels={LABEL_RESERVATION: placement.reservation_id or ""},
        annotations=annotations,
        affinity=(requiring_nodes if pin_to_nodes else preferring_nodes)(authored_affinity, placement.nodes),
    )
