"""Cluster profiles in the metadata DB: declarative apply with a diff, state changes, deletion.

Each call runs in the caller's session and transaction; `apply` validates the whole fleet before
it writes anything, so a bad file changes nothing. Every change leaves an audit row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from airflow_mcsched.access.profiles import ClusterProfile, ClusterState, FleetSpec
from airflow_mcsched.service.tables import AuditRow, ClusterRow, ClusterStatusRow, NodePoolRow


class ChangeKind(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    UNCHANGED = "unchanged"
    DELETE = "delete"


@dataclass(frozen=True)
class ClusterChange:
    """One cluster's part of an apply: what happens to it and which fields change."""

    cluster: str
    kind: ChangeKind
    fields: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # path -> (old, new)

    def describe(self) -> str:
        if self.kind is not ChangeKind.UPDATE:
            return f"{self.kind.value:9} {self.cluster}"
        parts = [f"{path}: {old!r} -> {new!r}" for path, (old, new) in sorted(self.fields.items())]
        return f"update    {self.cluster}\n" + "\n".join(f"            {p}" for p in parts)


@dataclass(frozen=True)
class ApplyPlan:
    changes: list[ClusterChange]
    dry_run: bool

    @property
    def changed(self) -> bool:
        return any(c.kind is not ChangeKind.UNCHANGED for c in self.changes)

    def describe(self) -> str:
        head = "dry run, nothing written" if self.dry_run else "applied"
        return "\n".join([f"{head}:"] + [c.describe() for c in self.changes])


class ClusterNotFound(KeyError):
    def __str__(self) -> str:
        return f"no cluster named {self.args[0]!r}; `mcsched clusters list` shows the known ones"


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Flatten a JSON document to dotted paths so a diff names exactly the fields that change."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) and "name" in v for v in value):
        out = {}
        for item in value:
            out.update(_flatten(item, f"{prefix}[{item['name']}]"))
        return out
    return {prefix: value}


def diff_specs(old: dict[str, Any], new: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    a, b = _flatten(old), _flatten(new)
    return {k: (a.get(k), b.get(k)) for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)}


def profile_of(row: ClusterRow) -> ClusterProfile:
    return ClusterProfile.model_validate(row.spec)


def _spec_json(profile: ClusterProfile) -> dict[str, Any]:
    return profile.model_dump(mode="json")


def _fill_row(row: ClusterRow, profile: ClusterProfile) -> None:
    row.kind = profile.kind.value
    row.region = profile.region
    row.zone = profile.zone
    row.failure_domain = profile.domain
    row.connection_id = profile.conn_id
    row.namespace = profile.namespace
    row.state = profile.state.value
    row.spec = _spec_json(profile)
    row.pools = [
        NodePoolRow(
            name=p.name,
            gpu_type=p.gpu_type,
            gpus_per_node=p.gpus_per_node,
            nodes=p.nodes,
            price_per_gpu_hour=p.price_per_gpu_hour,
            spot_price_per_gpu_hour=p.spot_price_per_gpu_hour,
        )
        for p in profile.node_pools
    ]


def audit(session: Session, actor: str, action: str, subject_kind: str, subject: str, **details: Any) -> None:
    session.add(AuditRow(**audit_values(actor, action, subject_kind, subject, **details)))


def audit_values(actor: str, action: str, subject_kind: str, subject: str, **details: Any) -> dict[str, Any]:
    """An audit row's columns (its time is the insert's)."""
    return {"actor": actor, "action": action, "subject_kind": subject_kind, "subject": subject, "details": details}


class ClusterStore:
    """Reads and writes cluster profiles within one session."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def _row(self, name: str) -> ClusterRow:
        row = self.session.get(ClusterRow, name)
        if row is None:
            raise ClusterNotFound(name)
        return row

    def list(self) -> list[ClusterProfile]:
        rows = self.session.scalars(select(ClusterRow).order_by(ClusterRow.name))
        return [profile_of(r) for r in rows]

    def get(self, name: str) -> ClusterProfile:
        return profile_of(self._row(name))

    def generation(self, name: str) -> int:
        return self._row(name).generation

    def plan(self, fleet: FleetSpec, prune: bool = False) -> list[ClusterChange]:
        existing = {r.name: r for r in self.session.scalars(select(ClusterRow))}
        changes: list[ClusterChange] = []
        for profile in fleet.clusters:
            row = existing.get(profile.name)
            if row is None:
                changes.append(ClusterChange(profile.name, ChangeKind.CREATE))
                continue
            fields = diff_specs(row.spec, _spec_json(profile))
            changes.append(ClusterChange(profile.name, ChangeKind.UPDATE if fields else ChangeKind.UNCHANGED, fields))
        if prune:
            declared = {c.name for c in fleet.clusters}
            changes += [ClusterChange(n, ChangeKind.DELETE) for n in sorted(existing.keys() - declared)]
        return changes

    def apply(self, fleet: FleetSpec, actor: str, dry_run: bool = False, prune: bool = False) -> ApplyPlan:
        """Create or update every cluster of the fleet (idempotent); `prune` deletes undeclared ones."""
        changes = self.plan(fleet, prune=prune)
        if not dry_run:
            for change in changes:
                self._write(change, fleet, actor)
            self.session.flush()
        return ApplyPlan(changes, dry_run)

    def _write(self, change: ClusterChange, fleet: FleetSpec, actor: str) -> None:
        if change.kind is ChangeKind.UNCHANGED:
            return
        if change.kind is ChangeKind.DELETE:
            self.delete(change.cluster, actor)
            return
        profile = fleet.cluster(change.cluster)
        if change.kind is ChangeKind.CREATE:
            row = ClusterRow(name=profile.name, generation=1)
            _fill_row(row, profile)
            self.session.add(row)
            audit(self.session, actor, "cluster.create", "cluster", profile.name, spec=row.spec)
        else:
            row = self._row(profile.name)
            _fill_row(row, profile)
            row.generation += 1
            changed = {k: [old, new] for k, (old, new) in change.fields.items()}
            audit(self.session, actor, "cluster.update", "cluster", profile.name, changes=changed)

    def set_state(self, name: str, state: ClusterState, actor: str, reason: str = "") -> ClusterProfile:
        """Cordon, uncordon or put into maintenance; running work is not touched."""
        row = self._row(name)
        old = row.state
        profile = profile_of(row).model_copy(update={"state": state})
        _fill_row(row, profile)
        if old != state.value:
            row.generation += 1
            audit(self.session, actor, f"cluster.{state.value}", "cluster", name, previous=old, reason=reason)
        self.session.flush()
        return profile

    def delete(self, name: str, actor: str) -> None:
        row = self._row(name)
        status = self.session.get(ClusterStatusRow, name)
        if status is not None:  # not every SQLite connection enforces ON DELETE CASCADE
            self.session.delete(status)
        self.session.delete(row)
        audit(self.session, actor, "cluster.delete", "cluster", name, spec=row.spec)
        self.session.flush()
