"""Pod admission defaults and the facts the scheduler and kubelet read from a pod spec.

`apply_pod_defaults` does what apiserver defaulting does to a new pod; `pod_demand` is what a
pod asks of a node (the effective request: the larger of the sum of containers and any init
container); `choose_runtime` says how the virtual kubelet will run a container.
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from airflow_mcsched.virtual.options import VirtualClusterOptions
from airflow_mcsched.virtual.quantities import cpu_milli, parse_quantity, to_int_ceil
from airflow_mcsched.virtual.vocabulary import (
    ANNOTATION_DURATION,
    ANNOTATION_EXIT_CODE,
    ANNOTATION_GPU_MILLI,
    ANNOTATION_RUNTIME,
    MILLI_PER_GPU,
    RESOURCE_GPU,
)

_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's: no vowels, no look-alikes


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def generate_name(prefix: str) -> str:
    """Complete a `generateName` prefix as the apiserver does (prefix cut to fit, 5 random chars)."""
    return prefix[:58] + "".join(secrets.choice(_NAME_SUFFIX_ALPHABET) for _ in range(5))


def _default_container(container: dict[str, Any]) -> None:
    image = str(container.get("image") or "")
    tag = image.rsplit("/", 1)[-1]
    if "imagePullPolicy" not in container:
        latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
        container["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    resources = container.setdefault("resources", {})
    limits = resources.get("limits") or {}
    if limits:
        requests = resources.setdefault("requests", {})
        for name, value in limits.items():
            requests.setdefault(name, value)


def apply_pod_defaults(pod: dict[str, Any], namespace: str) -> dict[str, Any]:
    meta = pod.setdefault("metadata", {})
    pod["kind"], pod["apiVersion"] = "Pod", "v1"
    meta["namespace"] = namespace
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = generate_name(meta["generateName"])
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now_rfc3339()
    meta.pop("resourceVersion", None)
    meta.pop("deletionTimestamp", None)
    meta.pop("deletionGracePeriodSeconds", None)
    meta["generation"] = 1
    for empty in ("labels", "annotations"):
        if meta.get(empty) == {}:
            del meta[empty]
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    for list_field in ("containers", "initContainers"):
        for container in spec.get(list_field) or []:
            if isinstance(container, dict):
                _default_container(container)
    pod["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}
    return pod


def qos_class(spec: dict[str, Any]) -> str:
    containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        any_set = any_set or bool(requests or limits)
        for name in ("cpu", "memory"):
            if name not in limits or parse_quantity(requests.get(name, limits[name])) != parse_quantity(limits[name]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


@dataclass(frozen=True)
class PodDemand:
    """What a pod needs from one node."""

    cpu_milli: int = 0
    memory_bytes: int = 0
    gpus: int = 0  # whole GPUs
    gpu_milli: int = 0  # a share of one GPU (only when gpus == 0)
    other: tuple[tuple[str, int], ...] = ()  # other extended resources, e.g. ("example.com/fpga", 1)

    def describe(self) -> str:
        parts = [f"cpu={self.cpu_milli}m", f"memory={self.memory_bytes}"]
        if self.gpus:
            parts.append(f"{RESOURCE_GPU}={self.gpus}")
        if self.gpu_milli:
            parts.append(f"{ANNOTATION_GPU_MILLI}={self.gpu_milli}")
        return ", ".join(parts)


def _container_requests(container: dict[str, Any]) -> dict[str, Any]:
    res = container.get("resources") or {}
    requests = dict(res.get("limits") or {})
    requests.update(res.get("requests") or {})
    return {k: parse_quantity(v) for k, v in requests.items()}


def pod_demand(pod: dict[str, Any]) -> PodDemand:
    spec = pod.get("spec") or {}
    total: dict[str, Any] = {}
    for c in spec.get("containers") or []:
        for name, value in _container_requests(c).items():
            total[name] = total.get(name, 0) + value
    for c in spec.get("initContainers") or []:
        for name, value in _container_requests(c).items():
            total[name] = max(total.get(name, 0), value)
    gpus = to_int_ceil(total.pop(RESOURCE_GPU, 0))
    share = 0
    annotation = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_GPU_MILLI)
    if annotation and gpus <= 1:  # a share applies to pods asking for at most one GPU
        share = int(annotation)
        gpus, share = (1, 0) if share >= MILLI_PER_GPU else (0, share)
    other = tuple(sorted((name, to_int_ceil(v)) for name, v in total.items() if "/" in name and v > 0))
    return PodDemand(
        cpu_milli=cpu_milli(total.get("cpu", 0)),
        memory_bytes=to_int_ceil(total.get("memory", 0)),
        gpus=gpus,
        gpu_milli=share,
        other=other,
    )


def choose_runtime(pod: dict[str, Any], container: dict[str, Any], options: VirtualClusterOptions) -> str:
    """`timed` or `process`: the pod annotation wins, then the cluster default (`auto`: command given?)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if ANNOTATION_RUNTIME in annotations:
        return annotations[ANNOTATION_RUNTIME]
    if options.default_runtime != "auto":
        return options.default_runtime
    return "process" if container.get("command") else "timed"


def timed_duration(pod: dict[str, Any], options: VirtualClusterOptions) -> float:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(ANNOTATION_DURATION)
    return float(value) if value is not None else options.default_duration_seconds


def timed_exit_code(pod: dict[str, Any]) -> int:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return int(annotations.get(ANNOTATION_EXIT_CODE, "0"))


def is_terminal(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
