"""One virtual cluster: nodes from a cluster profile, an object store, a scheduler and a kubelet.

`VirtualCluster` is what the HTTP API calls into; it does the apiserver's part of each request
(decode, default, validate, store) and leaves timing to the scheduling loop and the kubelet.
Everything here is synchronous and thread-safe through the store lock.
"""

from __future__ import annotations

import copy
import secrets
import shutil
import tempfile
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow_mcsched.access.profiles import ClusterProfile
from airflow_mcsched.virtual import nodes as node_objects
from airflow_mcsched.virtual.errors import ApiError, bad_request, conflict, unprocessable
from airflow_mcsched.virtual.events import NODE_CONTROLLER, EventRecorder
from airflow_mcsched.virtual.faults import FaultInjector
from airflow_mcsched.virtual.kubelet import Kubelet, PodRun, pod_condition, set_condition
from airflow_mcsched.virtual.options import VirtualClusterOptions
from airflow_mcsched.virtual.patches import apply_patch
from airflow_mcsched.virtual.pod_logs import ContainerLog
from airflow_mcsched.virtual.pods import apply_pod_defaults, is_terminal, now_rfc3339, pod_demand
from airflow_mcsched.virtual.scheduler import NodeCapacity, Placement, Scheduler
from airflow_mcsched.virtual.scheduling_loop import SchedulingLoop
from airflow_mcsched.virtual.store import ObjectStore, StoredObject, dump, require_namespace_exists
from airflow_mcsched.virtual.timeline import Timeline
from airflow_mcsched.virtual.validation import (
    decode_object,
    decode_pod,
    validate_labels,
    validate_namespace,
    validate_pod,
    validate_pod_update,
)
from airflow_mcsched.virtual.vocabulary import MILLI_PER_GPU

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class VirtualCluster:
    def __init__(
        self,
        profile: ClusterProfile,
        options: VirtualClusterOptions | None = None,
        token: str | None = None,
        work_dir: Path | None = None,
        cluster_index: int = 0,
    ) -> None:
        self.profile = profile
        self.options = options or VirtualClusterOptions()
        self.token = token or secrets.token_urlsafe(24)
        self._own_work_dir = work_dir is None
        self.work_dir = work_dir or Path(tempfile.mkdtemp(prefix=f"mcsched-{profile.name}-"))
        self.store = ObjectStore()
        self.events = EventRecorder(self.store)
        self.timeline = Timeline(profile.name)
        self.faults = FaultInjector()
        created = now_rfc3339()
        for ns in dict.fromkeys((*SYSTEM_NAMESPACES, profile.namespace)):
            self.store.create("Namespace", "", ns, _namespace_object(ns, created))
        capacities: dict[str, NodeCapacity] = {}
        node_ips: dict[str, str] = {}
        for node in node_objects.build_nodes(profile, created, cluster_index):
            name = node["metadata"]["name"]
            capacities[name] = NodeCapacity.from_node(node, self.options.max_pods_per_node)
            node_ips[name] = node_objects.node_ip(node)
            self.store.create("Node", "", name, node)
        self.scheduler = Scheduler(capacities)
        self.kubelet = Kubelet(
            self.store, self.events, self.timeline, self.options, self.work_dir, node_ips, self._released
        )
        self.scheduling = SchedulingLoop(self.store, self.events, self.timeline, self.scheduler, self.kubelet)

    @property
    def name(self) -> str:
        return self.profile.name

    def start(self) -> None:
        self.timeline.start()

    def stop(self) -> None:
        """Kill every container, end every watch and log stream."""
        with self.store.lock:
            for uid in list(self.kubelet.runs):
                self.kubelet.forget(uid)
        self.timeline.stop()
        self.store.close()
        if self._own_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def _released(self, run: PodRun) -> None:
        self.scheduler.release(run.placement, run.demand)
        self.scheduling.capacity_changed()

    # --- namespaces ----------------------------------------------------------------------------

    def create_namespace(self, body: Any) -> StoredObject:
        ns = decode_object(body, "Namespace")
        meta = ns.setdefault("metadata", {})
        errors = validate_namespace(ns)
        if errors:
            raise unprocessable("Namespace", meta.get("name", ""), errors)
        obj = _namespace_object(meta["name"], now_rfc3339())
        obj["metadata"].update({k: v for k, v in meta.items() if k in ("labels", "annotations")})
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        return self.store.create("Namespace", "", meta["name"], obj)

    # --- pods ----------------------------------------------------------------------------------

    def create_pod(self, namespace: str, body: Any, dry_run: bool = False) -> bytes:
        pod = decode_pod(body)
        meta = pod.setdefault("metadata", {})
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        apply_pod_defaults(pod, namespace)
        errors = validate_pod(pod)
        if errors:
            raise unprocessable("Pod", meta.get("name") or meta.get("generateName") or "", errors)
        demand = pod_demand(pod)
        with self.store.lock:
            require_namespace_exists(self.store, namespace)
            if dry_run:
                if self.store.get("Pod", namespace, meta["name"]):
                    raise ApiError(
                        409,
                        "AlreadyExists",
                        f'pods "{meta["name"]}" already exists',
                        {"name": meta["name"], "kind": "pods"},
                    )
                return dump(pod)
            stored = self.store.create("Pod", namespace, meta["name"], pod)
            if pod["spec"].get("nodeName"):
                self._admit_prebound(stored.obj, demand)
            else:
                self.scheduling.enqueue(stored.obj, demand)
            return stored.raw

    def _admit_prebound(self, pod: dict[str, Any], demand: Any) -> None:
        """A pod created with spec.nodeName skips the scheduler; the kubelet admits or rejects it."""
        node = pod["spec"]["nodeName"]
        capacity = self.scheduler.capacities.get(node)
        if capacity is None:
            return  # no such node: the pod stays Pending, as in Kubernetes
        short = capacity.shortfalls(demand)
        if short:
            resource = short[0].removeprefix("Insufficient ")

            def rejected(p: dict[str, Any]) -> None:
                p["status"].update(
                    phase="Failed",
                    reason=f"OutOf{resource}",
                    message=f"Pod was rejected: Node didn't have enough resource: {resource}",
                )

            self.store.update("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"], rejected)
            return
        slots = capacity.gpu_slots(demand)
        assert slots is not None
        self.scheduler.reserve(Placement(node, *slots), demand)

        def scheduled(p: dict[str, Any]) -> None:
            set_condition(p["status"], pod_condition("PodScheduled", True))

        stored = self.store.update("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"], scheduled)
        self.kubelet.admit(stored.obj, Placement(node, *slots), demand)

    def patch_pod(self, namespace: str, name: str, content_type: str, patch: Any) -> bytes:
        with self.store.lock:
            old = self.store.require("Pod", namespace, name).obj
            new = apply_patch(content_type, copy.deepcopy(old), patch)
            return self._update_pod(namespace, name, old, new)

    def replace_pod(self, namespace: str, name: str, body: Any) -> bytes:
        new = decode_pod(body)
        with self.store.lock:
            old = self.store.require("Pod", namespace, name).obj
            wanted_rv = (new.get("metadata") or {}).get("resourceVersion")
            if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
                raise conflict(
                    "Pod",
                    name,
                    "the object has been modified; please apply your changes to the latest version and try again",
                )
            return self._update_pod(namespace, name, old, new)

    def _update_pod(self, namespace: str, name: str, old: dict[str, Any], new: dict[str, Any]) -> bytes:
        decode_pod(new)
        new.setdefault("metadata", {})
        for managed in ("resourceVersion", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if managed in old["metadata"]:
                new["metadata"][managed] = old["metadata"][managed]
        new["status"] = old["status"]  # status is written through the status subresource only
        errors = validate_pod_update(new, old)
        if errors:
            raise unprocessable("Pod", name, errors)
        if new == old:
            return self.store.require("Pod", namespace, name).raw
        return self.store.replace("Pod", namespace, name, new).raw

    def delete_pod(
        self, namespace: str, name: str, grace_seconds: int | None = None, preconditions: dict[str, Any] | None = None
    ) -> bytes:
        """Graceful unless unbound, finished or grace 0; returns the object as the apiserver does."""
        with self.store.lock:
            pod = self.store.require("Pod", namespace, name).obj
            meta = pod["metadata"]
            for key in ("uid", "resourceVersion"):
                wanted = (preconditions or {}).get(key)
                if wanted and wanted != meta.get(key):
                    raise conflict(
                        "Pod",
                        name,
                        f"Precondition failed: {'UID' if key == 'uid' else key} in precondition: {wanted}, "
                        f"{key} in object meta: {meta.get(key)}",
                    )
            if grace_seconds is None:
                grace_seconds = int(
                    pod["spec"].get("terminationGracePeriodSeconds", self.options.default_grace_seconds)
                )
            run = self.kubelet.runs.get(meta["uid"])
            if run is None or run.terminal or grace_seconds <= 0 or is_terminal(pod):
                return self._remove_pod(namespace, name, meta["uid"])
            if meta.get("deletionTimestamp"):
                return self.store.require("Pod", namespace, name).raw
            deadline = (datetime.now(UTC) + timedelta(seconds=grace_seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")

            def terminating(p: dict[str, Any]) -> None:
                p["metadata"]["deletionTimestamp"] = deadline
                p["metadata"]["deletionGracePeriodSeconds"] = grace_seconds

            stored = self.store.update("Pod", namespace, name, terminating)
            self.kubelet.terminate(meta["uid"], grace_seconds)
            return stored.raw

    def _remove_pod(self, namespace: str, name: str, uid: str) -> bytes:
        self.scheduling.forget(uid)
        deleted = self.store.delete("Pod", namespace, name)
        self.kubelet.forget(uid)
        self.events.forget(uid)
        return deleted.raw

    def pod_log(self, namespace: str, name: str, container: str | None) -> ContainerLog | None:
        """The log to read, None when the pod has no node yet (empty answer), else ApiError 400."""
        with self.store.lock:
            pod = self.store.require("Pod", namespace, name).obj
            spec = pod["spec"]
            mains = [c["name"] for c in spec["containers"]]
            inits = [c["name"] for c in spec.get("initContainers") or []]
            if not container:
                if len(mains) != 1:
                    extra = f" or one of the init containers: [{' '.join(inits)}]" if inits else ""
                    raise bad_request(
                        f"a container name must be specified for pod {name}, choose one of: [{' '.join(mains)}]{extra}"
                    )
                container = mains[0]
            if container not in mains + inits:
                raise bad_request(f"container {container} is not valid for pod {name}")
            if not spec.get("nodeName"):
                return None
            logs = self.kubelet.logs.get(pod["metadata"]["uid"], {})
            log = logs.get(container)
            statuses = (pod["status"].get("containerStatuses") or []) + (
                pod["status"].get("initContainerStatuses") or []
            )
            state = next(
                (s["state"] for s in statuses if s["name"] == container), {"waiting": {"reason": "ContainerCreating"}}
            )
            if log is None or ("waiting" in state and not log.read()[0]):
                reason = (state.get("waiting") or {}).get("reason", "ContainerCreating")
                raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
            return log

    # --- nodes ---------------------------------------------------------------------------------

    def patch_node(self, name: str, content_type: str, patch: Any) -> bytes:
        with self.store.lock:
            old = self.store.require("Node", "", name).obj
            new = apply_patch(content_type, copy.deepcopy(old), patch)
            decode_object(new, "Node")
            new["status"] = old["status"]
            if new["metadata"].get("name") != name:
                raise unprocessable("Node", name, [])
            errors = validate_labels(new["metadata"].get("labels") or {}, "metadata.labels")
            if errors:
                raise unprocessable("Node", name, errors)
            node_objects.sync_unschedulable_taint(new, now_rfc3339())
            stored = self.store.replace("Node", "", name, new)
            if bool(old["spec"].get("unschedulable")) != bool(new["spec"].get("unschedulable")) or old["spec"].get(
                "taints"
            ) != new["spec"].get("taints"):
                self.scheduling.capacity_changed()
            return stored.raw

    def cordon(self, name: str, cordoned: bool = True) -> None:
        with self.store.lock:
            self.store.update("Node", "", name, lambda n: node_objects.set_unschedulable(n, cordoned, now_rfc3339()))
            self.scheduling.capacity_changed()

    def set_node_ready(self, name: str, ready: bool, running_pods: str = "fail") -> None:
        """Node health fault. NotReady + `running_pods="fail"`: its pods fail as on node loss;
        `"keep"`: they run on (a network partition between node and control plane)."""
        if running_pods not in ("fail", "keep"):
            raise ValueError("running_pods must be 'fail' or 'keep'")
        with self.store.lock:
            stored = self.store.update("Node", "", name, lambda n: node_objects.set_ready(n, ready, now_rfc3339()))
            reason = "NodeReady" if ready else "NodeNotReady"
            self.events.record(stored.obj, "Normal", reason, f"Node {name} status is now: {reason}", NODE_CONTROLLER)
            if not ready and running_pods == "fail":
                self.kubelet.node_lost(name)
            self.scheduling.capacity_changed()

    # --- what the CLI and tests look at ---------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        with self.store.lock:
            nodes = []
            for stored in self.store.objects("Node"):
                node = stored.obj
                cap = self.scheduler.capacities[stored.name]
                nodes.append(
                    {
                        "name": stored.name,
                        "pool": node["metadata"]["labels"].get("mcsched.io/node-pool"),
                        "ready": node_objects.is_ready(node),
                        "unschedulable": bool(node["spec"].get("unschedulable")),
                        "gpus": len(cap.gpu_free_milli),
                        "gpus_free": cap.whole_gpus_free,
                        "gpu_milli_free": list(cap.gpu_free_milli),
                        "cpu_milli_free": cap.cpu_milli - cap.cpu_used,
                        "memory_bytes_free": cap.memory_bytes - cap.memory_used,
                        "pods": cap.pods,
                    }
                )
            phases: dict[str, int] = {}
            for stored in self.store.objects("Pod"):
                phase = stored.obj["status"].get("phase", "Pending")
                phases[phase] = phases.get(phase, 0) + 1
            return {
                "cluster": self.name,
                "nodes": nodes,
                "gpus": sum(n["gpus"] for n in nodes),
                "gpus_free": sum(n["gpus_free"] for n in nodes if n["ready"] and not n["unschedulable"]),
                "gpu_milli_free": sum(sum(n["gpu_milli_free"]) for n in nodes if n["ready"] and not n["unschedulable"]),
                "milli_per_gpu": MILLI_PER_GPU,
                "pods": phases,
                "pending_scheduling": len(self.scheduling.queue),
                "resource_version": self.store.resource_version,
                "faults": self.faults.faults.to_dict(),
            }


def _namespace_object(name: str, created: str) -> dict[str, Any]:
    return {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": str(uuid.uuid4()),
            "creationTimestamp": created,
            "labels": {"kubernetes.io/metadata.name": name},
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }
