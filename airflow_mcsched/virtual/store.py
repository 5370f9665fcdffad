"""The object store of one virtual cluster: objects, the resourceVersion counter, list and watch.

Like etcd behind kube-apiserver, every write bumps one cluster-wide revision, which becomes the
object's `metadata.resourceVersion`. Each object is serialised once per write (`raw`), so GET,
LIST and WATCH answer from bytes. Recent changes are kept so a watch can resume from a
resourceVersion; one older than the kept window gets `410 Expired`, as from a real apiserver.
All methods take the store lock; it is an RLock the cluster shares for its own transactions.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from airflow_mcsched.virtual.errors import ApiError, already_exists, bad_request, gone, not_found
from airflow_mcsched.virtual.selectors import FieldSelector, LabelSelector, field_values

LIST_KIND = {"Pod": "PodList", "Node": "NodeList", "Namespace": "NamespaceList", "Event": "EventList"}


def dump(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass
class StoredObject:
    kind: str
    namespace: str  # "" for cluster-scoped kinds
    name: str
    obj: dict[str, Any]
    raw: bytes
    labels: dict[str, str]
    fields: dict[str, str]

    @property
    def rv(self) -> int:
        return int(self.obj["metadata"]["resourceVersion"])


@dataclass(frozen=True)
class Change:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    kind: str
    namespace: str
    raw: bytes
    labels: dict[str, str]
    fields: dict[str, str]
    old_labels: dict[str, str] | None
    old_fields: dict[str, str] | None


class Watcher:
    """One open watch: filters changes and hands JSON lines (b'...\\n') to `deliver`.

    `deliver(None)` means the store closed; the stream should end.
    """

    def __init__(
        self,
        kind: str,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        deliver: Callable[[bytes | None], None],
    ) -> None:
        self.kind = kind
        self.namespace = namespace
        self.label_selector = labels
        self.field_selector = fields
        self.deliver = deliver

    def _matches(self, labels: dict[str, str] | None, fields: dict[str, str] | None) -> bool:
        if labels is None or fields is None:
            return False
        return self.label_selector.matches(labels) and self.field_selector.matches(fields)

    def offer(self, change: Change) -> None:
        if change.kind != self.kind or (self.namespace is not None and change.namespace != self.namespace):
            return
        now = self._matches(change.labels, change.fields)
        before = self._matches(change.old_labels, change.old_fields)
        if change.type == "ADDED":
            kind = "ADDED" if now else None
        elif change.type == "DELETED":
            kind = "DELETED" if before else None
        elif now and before:
            kind = "MODIFIED"
        elif now:
            kind = "ADDED"
        elif before:
            kind = "DELETED"  # left the selection, as the apiserver reports it
        else:
            kind = None
        if kind:
            self.deliver(b'{"type":"' + kind.encode() + b'","object":' + change.raw + b"}\n")


class ObjectStore:
    def __init__(self, history: int = 20_000) -> None:
        self.lock = threading.RLock()
        self._rv = 0
        self._objects: dict[str, dict[tuple[str, str], StoredObject]] = {k: {} for k in LIST_KIND}
        self._history: deque[Change] = deque(maxlen=history)
        self._compacted_rv = 0
        self._watchers: list[Watcher] = []
        self._closed = False

    @property
    def resource_version(self) -> int:
        return self._rv

    def _stamp(self, kind: str, namespace: str, name: str, obj: dict[str, Any]) -> StoredObject:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        return StoredObject(
            kind, namespace, name, obj, dump(obj), dict(obj["metadata"].get("labels") or {}), field_values(kind, obj)
        )

    def _publish(self, change_type: str, new: StoredObject, old: StoredObject | None) -> None:
        change = Change(
            self._rv,
            change_type,
            new.kind,
            new.namespace,
            new.raw,
            new.labels,
            new.fields,
            old.labels if old else None,
            old.fields if old else None,
        )
        if len(self._history) == self._history.maxlen:
            self._compacted_rv = self._history[0].rv
        self._history.append(change)
        for watcher in self._watchers:
            watcher.offer(change)

    def create(self, kind: str, namespace: str, name: str, obj: dict[str, Any]) -> StoredObject:
        with self.lock:
            if (namespace, name) in self._objects[kind]:
                raise already_exists(kind, name)
            stored = self._stamp(kind, namespace, name, obj)
            self._objects[kind][(namespace, name)] = stored
            self._publish("ADDED", stored, None)
            return stored

    def get(self, kind: str, namespace: str, name: str) -> StoredObject | None:
        with self.lock:
            return self._objects[kind].get((namespace, name))

    def require(self, kind: str, namespace: str, name: str) -> StoredObject:
        stored = self.get(kind, namespace, name)
        if stored is None:
            raise not_found(kind, name)
        return stored

    def update(self, kind: str, namespace: str, name: str, mutate: Callable[[dict[str, Any]], None]) -> StoredObject:
        """Change an object in place under the lock; a new revision is written and announced."""
        with self.lock:
            old = self.require(kind, namespace, name)
            mutate(old.obj)
            stored = self._stamp(kind, namespace, name, old.obj)
            self._objects[kind][(namespace, name)] = stored
            self._publish("MODIFIED", stored, old)
            return stored

    def replace(self, kind: str, namespace: str, name: str, obj: dict[str, Any]) -> StoredObject:
        with self.lock:
            old = self.require(kind, namespace, name)
            stored = self._stamp(kind, namespace, name, obj)
            self._objects[kind][(namespace, name)] = stored
            self._publish("MODIFIED", stored, old)
            return stored

    def delete(self, kind: str, namespace: str, name: str) -> StoredObject:
        with self.lock:
            old = self.require(kind, namespace, name)
            del self._objects[kind][(namespace, name)]
            # The DELETED event carries the object at a new revision, as etcd's delete does.
            stored = self._stamp(kind, namespace, name, old.obj)
            self._publish("DELETED", stored, old)
            return stored

    def objects(self, kind: str, namespace: str | None = None) -> Iterator[StoredObject]:
        """Objects of a kind (caller holds the lock while iterating), in namespace/name order."""
        for key in sorted(self._objects[kind]):
            if namespace is None or key[0] == namespace:
                yield self._objects[kind][key]

    def count(self, kind: str) -> int:
        return len(self._objects[kind])

    def list(
        self,
        kind: str,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        limit: int = 0,
        continue_from: str = "",
    ) -> bytes:
        """A `<Kind>List` body; `limit`/`continue` page in name order like the apiserver."""
        with self.lock:
            selected = [
                o for o in self.objects(kind, namespace) if labels.matches(o.labels) and fields.matches(o.fields)
            ]
            if continue_from:
                selected = [o for o in selected if f"{o.namespace}/{o.name}" > continue_from]
            next_token = ""
            if limit and len(selected) > limit:
                selected = selected[:limit]
                next_token = f"{selected[-1].namespace}/{selected[-1].name}"
            meta: dict[str, Any] = {"resourceVersion": str(self._rv)}
            if next_token:
                meta["continue"] = next_token
            head = dump({"kind": LIST_KIND[kind], "apiVersion": "v1", "metadata": meta})
            return head[:-1] + b',"items":[' + b",".join(o.raw for o in selected) + b"]}"

    def watch(
        self,
        kind: str,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        resource_version: str | None,
        deliver: Callable[[bytes | None], None],
    ) -> Watcher:
        """Open a watch; initial ADDED events (or the replay since `resource_version`) go out first."""
        watcher = Watcher(kind, namespace, labels, fields, deliver)
        with self.lock:
            if self._closed:
                deliver(None)
                return watcher
            if resource_version in (None, "", "0"):
                for o in self.objects(kind, namespace):
                    if labels.matches(o.labels) and fields.matches(o.fields):
                        deliver(b'{"type":"ADDED","object":' + o.raw + b"}\n")
            else:
                try:
                    since = int(resource_version)
                except ValueError:
                    raise bad_request(f"Invalid value for resourceVersion: {resource_version!r}") from None
                if since < self._compacted_rv:
                    status = gone(f"too old resource version: {since} ({self._compacted_rv + 1})").status()
                    deliver(b'{"type":"ERROR","object":' + dump(status) + b"}\n")
                    deliver(None)
                    return watcher
                for change in self._history:
                    if change.rv > since:
                        watcher.offer(change)
            self._watchers.append(watcher)
            return watcher

    def unwatch(self, watcher: Watcher) -> None:
        with self.lock:
            if watcher in self._watchers:
                self._watchers.remove(watcher)

    def close(self) -> None:
        """End every open watch (server shutdown)."""
        with self.lock:
            self._closed = True
            watchers, self._watchers = self._watchers, []
        for w in watchers:
            w.deliver(None)


def require_namespace_exists(store: ObjectStore, namespace: str) -> None:
    if store.get("Namespace", "", namespace) is None:
        raise ApiError(
            404, "NotFound", f'namespaces "{namespace}" not found', {"name": namespace, "kind": "namespaces"}
        )
