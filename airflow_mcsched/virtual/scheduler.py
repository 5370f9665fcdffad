"""Bin-packing scheduler: filter plugins say why a node cannot take a pod, best-fit picks among the rest.

Like kube-scheduler's framework, each filter returns the reasons a node fails (stopping at the
first failing plugin), and an unschedulable pod's message counts the reasons over all nodes:
"0/3 nodes are available: 3 Insufficient nvidia.com/gpu." Scoring is best-fit so that big pods
still find room: the feasible node left with the fewest whole free GPUs, then least free GPU
share, CPU, memory, then by name, so the choice is deterministic. A node the pod prefers (preferred
node affinity, by summed weight) goes before best fit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from airflow_mcsched.virtual import nodes as node_objects
from airflow_mcsched.virtual.pods import PodDemand
from airflow_mcsched.virtual.quantities import cpu_milli, parse_quantity, to_int_ceil
from airflow_mcsched.virtual.vocabulary import LABEL_GPU_SHARING, MILLI_PER_GPU, RESOURCE_GPU


@dataclass
class NodeCapacity:
    """What a node offers and what bound pods hold of it (terminal pods hold nothing)."""

    name: str
    cpu_milli: int
    memory_bytes: int
    max_pods: int
    gpu_sharing: bool
    gpu_free_milli: list[int]  # one entry per GPU; MILLI_PER_GPU = free
    extended: dict[str, int] = field(default_factory=dict)
    cpu_used: int = 0
    memory_used: int = 0
    pods: int = 0
    extended_used: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_node(cls, node: dict[str, Any], max_pods: int) -> NodeCapacity:
        alloc = node["status"]["allocatable"]
        gpus = to_int_ceil(parse_quantity(alloc.get(RESOURCE_GPU, "0")))
        labels = node["metadata"].get("labels") or {}
        extended = {k: to_int_ceil(parse_quantity(v)) for k, v in alloc.items() if "/" in k and k != RESOURCE_GPU}
        return cls(
            name=node["metadata"]["name"],
            cpu_milli=cpu_milli(parse_quantity(alloc["cpu"])),
            memory_bytes=to_int_ceil(parse_quantity(alloc["memory"])),
            max_pods=min(max_pods, int(alloc.get("pods", max_pods))),
            gpu_sharing=LABEL_GPU_SHARING in labels,
            gpu_free_milli=[MILLI_PER_GPU] * gpus,
            extended=extended,
        )

    @property
    def whole_gpus_free(self) -> int:
        return sum(1 for m in self.gpu_free_milli if m == MILLI_PER_GPU)

    def shortfalls(self, demand: PodDemand) -> list[str]:
        """NodeResourcesFit reasons, all of them, as kube-scheduler lists them."""
        reasons = []
        if self.pods + 1 > self.max_pods:
            reasons.append("Too many pods")
        if demand.cpu_milli > self.cpu_milli - self.cpu_used:
            reasons.append("Insufficient cpu")
        if demand.memory_bytes > self.memory_bytes - self.memory_used:
            reasons.append("Insufficient memory")
        if self.gpu_slots(demand) is None:
            reasons.append(f"Insufficient {RESOURCE_GPU}")
        for name, amount in demand.other:
            if amount > self.extended.get(name, 0) - self.extended_used.get(name, 0):
                reasons.append(f"Insufficient {name}")
        return reasons

    def gpu_slots(self, demand: PodDemand) -> tuple[tuple[int, ...], int] | None:
        """Which GPUs the pod would get, and the share of the first (0 = whole GPUs), or None."""
        if demand.gpu_milli and self.gpu_sharing:
            partial = [(m, i) for i, m in enumerate(self.gpu_free_milli) if demand.gpu_milli <= m < MILLI_PER_GPU]
            if partial:
                return (min(partial)[1],), demand.gpu_milli
            free = [i for i, m in enumerate(self.gpu_free_milli) if m == MILLI_PER_GPU]
            return ((free[0],), demand.gpu_milli) if free else None
        wanted = demand.gpus or (1 if demand.gpu_milli else 0)  # a share on a non-sharing node: one GPU
        free = [i for i, m in enumerate(self.gpu_free_milli) if m == MILLI_PER_GPU]
        if len(free) < wanted:
            return None
        return tuple(free[:wanted]), 0

    def take(self, demand: PodDemand, gpus: tuple[int, ...], share: int) -> None:
        self.cpu_used += demand.cpu_milli
        self.memory_used += demand.memory_bytes
        self.pods += 1
        for i in gpus:
            self.gpu_free_milli[i] -= share or MILLI_PER_GPU
        for name, amount in demand.other:
            self.extended_used[name] = self.extended_used.get(name, 0) + amount

    def give_back(self, demand: PodDemand, gpus: tuple[int, ...], share: int) -> None:
        self.cpu_used -= demand.cpu_milli
        self.memory_used -= demand.memory_bytes
        self.pods -= 1
        for i in gpus:
            self.gpu_free_milli[i] += share or MILLI_PER_GPU
        for name, amount in demand.other:
            self.extended_used[name] -= amount

    def score_after(self, demand: PodDemand, gpus: tuple[int, ...], share: int) -> tuple:
        free = list(self.gpu_free_milli)
        for i in gpus:
            free[i] -= share or MILLI_PER_GPU
        return (
            sum(1 for m in free if m == MILLI_PER_GPU),
            sum(free),
            self.cpu_milli - self.cpu_used - demand.cpu_milli,
            self.memory_bytes - self.memory_used - demand.memory_bytes,
            self.name,
        )


@dataclass(frozen=True)
class Placement:
    node: str
    gpus: tuple[int, ...] = ()
    gpu_milli: int = 0  # share of gpus[0]; 0 = the GPUs are whole


# --- filter plugins: (pod, node object, capacity, demand) -> reasons the node is unfit -------------

FilterPlugin = Callable[[dict[str, Any], dict[str, Any], NodeCapacity, PodDemand], list[str]]


def _tolerates(pod: dict[str, Any], taint: dict[str, Any]) -> bool:
    for tol in (pod.get("spec") or {}).get("tolerations") or []:
        if tol.get("effect") and tol["effect"] != taint["effect"]:
            continue
        if (tol.get("operator") or "Equal") == "Exists":
            if not tol.get("key") or tol["key"] == taint["key"]:
                return True
        elif tol.get("key") == taint["key"] and (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def node_unschedulable(pod, node, capacity, demand) -> list[str]:
    if not node["spec"].get("unschedulable"):
        return []
    taint = {"key": node_objects.TAINT_UNSCHEDULABLE, "effect": "NoSchedule"}
    return [] if _tolerates(pod, taint) else ["node(s) were unschedulable"]


def taint_toleration(pod, node, capacity, demand) -> list[str]:
    for taint in node["spec"].get("taints") or []:
        if taint["key"] == node_objects.TAINT_UNSCHEDULABLE:
            continue  # node_unschedulable's business
        if taint["effect"] in ("NoSchedule", "NoExecute") and not _tolerates(pod, taint):
            return [f"node(s) had untolerated taint {{{taint['key']}: {taint.get('value', '')}}}"]
    return []


def _expression_matches(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    present, value = key in labels, labels.get(key)
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    try:
        number, bound = int(value or ""), int(values[0])
    except (ValueError, IndexError):
        return False
    return number > bound if op == "Gt" else number < bound


def _term_matches(term: dict[str, Any], node: dict[str, Any]) -> bool:
    """A node selector term: all its expressions on the node's labels and fields on its name (an
    empty term matches nothing, as in Kubernetes)."""
    labels = node["metadata"].get("labels") or {}
    fields = {"metadata.name": node["metadata"]["name"]}
    return bool(
        all(_expression_matches(e, labels) for e in term.get("matchExpressions") or [])
        and all(_expression_matches(e, fields) for e in term.get("matchFields") or [])
        and (term.get("matchExpressions") or term.get("matchFields"))
    )


def _node_affinity(pod: dict[str, Any]) -> dict[str, Any]:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


def node_affinity(pod, node, capacity, demand) -> list[str]:
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    selector_ok = all(labels.get(k) == v for k, v in (spec.get("nodeSelector") or {}).items())
    terms = (_node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    affinity_ok = not terms or any(_term_matches(t, node) for t in terms)
    return [] if selector_ok and affinity_ok else ["node(s) didn't match Pod's node affinity/selector"]


def preferred_weight(pod: dict[str, Any], node: dict[str, Any]) -> int:
    """The summed weights of the pod's preferred node affinity terms that the node matches.

    kube-scheduler adds this (normalised, times the NodeAffinity plugin's weight of 2) to its other
    scores; here it ranks first, ahead of best fit, which is what that weight amounts to whenever
    a preferred node fits."""
    preferred = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return sum(int(p.get("weight") or 0) for p in preferred if _term_matches(p.get("preference") or {}, node))


def node_resources_fit(pod, node, capacity, demand) -> list[str]:
    return capacity.shortfalls(demand)


FILTERS: list[FilterPlugin] = [node_unschedulable, taint_toleration, node_affinity, node_resources_fit]


class Scheduler:
    """Chooses a node for a pod, or says in Kubernetes' words why none fits."""

    def __init__(self, capacities: dict[str, NodeCapacity], filters: list[FilterPlugin] | None = None) -> None:
        self.capacities = capacities
        self.filters = filters or FILTERS

    def unfit_reasons(self, pod: dict[str, Any], node: dict[str, Any], demand: PodDemand) -> list[str]:
        capacity = self.capacities[node["metadata"]["name"]]
        for plugin in self.filters:
            reasons = plugin(pod, node, capacity, demand)
            if reasons:
                return reasons
        return []

    def place(self, pod: dict[str, Any], demand: PodDemand, nodes: list[dict[str, Any]]) -> Placement | str:
        """A placement on the best feasible node, or the FailedScheduling message."""
        if not nodes:
            return "no nodes available to schedule pods"
        reasons: Counter[str] = Counter()
        best: tuple | None = None
        best_placement: Placement | None = None
        for node in nodes:
            unfit = self.unfit_reasons(pod, node, demand)
            if unfit:
                reasons.update(unfit)
                continue
            capacity = self.capacities[node["metadata"]["name"]]
            slots = capacity.gpu_slots(demand)
            assert slots is not None
            score = (-preferred_weight(pod, node), *capacity.score_after(demand, *slots))
            if best is None or score < best:
                best, best_placement = score, Placement(capacity.name, *slots)
        if best_placement is not None:
            return best_placement
        summary = sorted(f"{count} {reason}" for reason, count in reasons.items())
        return f"0/{len(nodes)} nodes are available: {', '.join(summary)}."

    def reserve(self, placement: Placement, demand: PodDemand) -> None:
        self.capacities[placement.node].take(demand, placement.gpus, placement.gpu_milli)

    def release(self, placement: Placement, demand: PodDemand) -> None:
        self.capacities[placement.node].give_back(demand, placement.gpus, placement.gpu_milli)
