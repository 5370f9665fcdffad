"""The scheduling queue: pending pods in priority then arrival order, retried when capacity frees.

A pass runs on the timeline thread whenever pods arrive or capacity changes (a pod ended, a node
became ready or was uncordoned), at most every `MIN_PASS_INTERVAL` seconds. A pod that failed is
not retried until capacity changed, and pods that ask for the same thing are judged once per
pass, so a backlog of a thousand identical pods costs one evaluation.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from airflow_mcsched.virtual.events import SCHEDULER, EventRecorder
from airflow_mcsched.virtual.kubelet import Kubelet, pod_condition, set_condition
from airflow_mcsched.virtual.pods import PodDemand
from airflow_mcsched.virtual.scheduler import Placement, Scheduler
from airflow_mcsched.virtual.store import ObjectStore
from airflow_mcsched.virtual.timeline import Timeline

MIN_PASS_INTERVAL = 0.01
# A still-unschedulable pod gets its FailedScheduling event repeated at most this often.
EVENT_REPEAT_SECONDS = 5.0


@dataclass
class QueuedPod:
    namespace: str
    name: str
    uid: str
    priority: int
    seq: int
    demand: PodDemand
    shape: str  # what placement depends on besides capacity; equal shapes fail alike
    failed_generation: int | None = None
    message: str = ""
    event_at: float = 0.0


def _shape(pod: dict[str, Any], demand: PodDemand) -> str:
    spec = pod["spec"]
    return json.dumps(
        [
            demand.cpu_milli,
            demand.memory_bytes,
            demand.gpus,
            demand.gpu_milli,
            demand.other,
            spec.get("nodeSelector"),
            spec.get("affinity"),
            spec.get("tolerations"),
        ],
        sort_keys=True,
    )


class SchedulingLoop:
    def __init__(
        self, store: ObjectStore, events: EventRecorder, timeline: Timeline, scheduler: Scheduler, kubelet: Kubelet
    ) -> None:
        self._store, self._events, self._timeline = store, events, timeline
        self.scheduler, self._kubelet = scheduler, kubelet
        self.queue: dict[str, QueuedPod] = {}
        self._seq = 0
        self.generation = 0
        self._pass_requested = False
        self._last_pass = 0.0

    def enqueue(self, pod: dict[str, Any], demand: PodDemand) -> None:
        meta = pod["metadata"]
        self._seq += 1
        self.queue[meta["uid"]] = QueuedPod(
            meta["namespace"],
            meta["name"],
            meta["uid"],
            int(pod["spec"].get("priority") or 0),
            self._seq,
            demand,
            _shape(pod, demand),
        )
        self.request_pass()

    def forget(self, uid: str) -> None:
        self.queue.pop(uid, None)

    def capacity_changed(self) -> None:
        self.generation += 1
        if self.queue:
            self.request_pass()

    def request_pass(self) -> None:
        if not self._pass_requested:
            self._pass_requested = True
            wait = self._last_pass + MIN_PASS_INTERVAL - time.monotonic()
            self._timeline.call_later(wait, self.run_pass)

    def run_pass(self) -> None:
        with self._store.lock:
            self._pass_requested = False
            self._last_pass = time.monotonic()
            nodes = [n.obj for n in self._store.objects("Node")]
            failed_shapes: dict[str, str] = {}
            for queued in sorted(self.queue.values(), key=lambda q: (-q.priority, q.seq)):
                if queued.failed_generation == self.generation:
                    continue
                stored = self._store.get("Pod", queued.namespace, queued.name)
                if stored is None or stored.obj["metadata"]["uid"] != queued.uid:
                    self.queue.pop(queued.uid, None)
                    continue
                pod = stored.obj
                result = failed_shapes.get(queued.shape) or self.scheduler.place(pod, queued.demand, nodes)
                if isinstance(result, Placement):
                    self.queue.pop(queued.uid)
                    self.bind(pod, result, queued.demand)
                else:
                    failed_shapes[queued.shape] = result
                    queued.failed_generation = self.generation
                    self._unschedulable(queued, pod, result)

    def bind(self, pod: dict[str, Any], placement: Placement, demand: PodDemand) -> None:
        """Reserve the node's resources, write the binding, hand the pod to the kubelet."""
        self.scheduler.reserve(placement, demand)
        meta = pod["metadata"]

        def bound(p: dict[str, Any]) -> None:
            p["spec"]["nodeName"] = placement.node
            set_condition(p["status"], pod_condition("PodScheduled", True))

        stored = self._store.update("Pod", meta["namespace"], meta["name"], bound)
        self._events.record(
            stored.obj,
            "Normal",
            "Scheduled",
            f"Successfully assigned {meta['namespace']}/{meta['name']} to {placement.node}",
            SCHEDULER,
        )
        self._kubelet.admit(stored.obj, placement, demand)

    def _unschedulable(self, queued: QueuedPod, pod: dict[str, Any], message: str) -> None:
        now = time.monotonic()
        changed = message != queued.message
        if changed:
            queued.message = message

            def pending(p: dict[str, Any]) -> None:
                set_condition(p["status"], pod_condition("PodScheduled", False, "Unschedulable", message))

            pod = self._store.update("Pod", queued.namespace, queued.name, pending).obj
        if changed or now - queued.event_at >= EVENT_REPEAT_SECONDS:
            queued.event_at = now
            self._events.record(pod, "Warning", "FailedScheduling", message, SCHEDULER)
