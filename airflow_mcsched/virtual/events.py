"""Core v1 Events about pods and nodes, recorded like the scheduler and kubelet record them.

A repeat of the same (object, reason, message) bumps `count` and `lastTimestamp` instead of
adding an object, as client-go's event correlator does. Old events are dropped past a cap,
standing in for the apiserver's one-hour event TTL.
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from datetime import UTC, datetime
from typing import Any

from airflow_mcsched.virtual.store import ObjectStore

SCHEDULER = "default-scheduler"
KUBELET = "kubelet"
NODE_CONTROLLER = "node-controller"


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(self, store: ObjectStore, max_events: int = 50_000) -> None:
        self._store = store
        self._max = max_events
        self._last_ns = 0
        self._order: deque[tuple[str, str]] = deque()
        # uid -> (reason, message) -> (namespace, name) of the event to bump on a repeat
        self._recent: dict[str, dict[tuple[str, str], tuple[str, str]]] = {}

    def record(
        self,
        obj: dict[str, Any],
        event_type: str,
        reason: str,
        message: str,
        component: str,
        host: str = "",
        field_path: str = "",
    ) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        seen = self._recent.setdefault(meta["uid"], {})
        with self._store.lock:
            key = seen.get((reason, message))
            if key and self._store.get("Event", *key):

                def again(event: dict[str, Any]) -> None:
                    event["count"] = event.get("count", 1) + 1
                    event["lastTimestamp"] = _time()

                self._store.update("Event", *key, again)
                return
            # client-go names events <object>.<unix nanos in hex>, so they list in time order
            self._last_ns = max(time.time_ns(), self._last_ns + 1)
            name = f"{meta['name']}.{self._last_ns:x}"
            involved = {
                "kind": obj["kind"],
                "name": meta["name"],
                "uid": meta["uid"],
                "apiVersion": "v1",
                "resourceVersion": meta.get("resourceVersion", ""),
            }
            if meta.get("namespace"):
                involved["namespace"] = meta["namespace"]
            if field_path:
                involved["fieldPath"] = field_path
            now = _time()
            event = {
                "kind": "Event",
                "apiVersion": "v1",
                "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4()), "creationTimestamp": now},
                "involvedObject": involved,
                "reason": reason,
                "message": message,
                "source": {"component": component, **({"host": host} if host else {})},
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
                "type": event_type,
                "eventTime": None,
                "reportingComponent": component,
                "reportingInstance": host or component,
            }
            self._store.create("Event", namespace, name, event)
            seen[(reason, message)] = (namespace, name)
            self._order.append((namespace, name))
            while len(self._order) > self._max:
                old = self._order.popleft()
                if self._store.get("Event", *old):
                    self._store.delete("Event", *old)

    def forget(self, uid: str) -> None:
        """Stop correlating events of a deleted object (its events stay, like in Kubernetes)."""
        with self._store.lock:
            self._recent.pop(uid, None)
