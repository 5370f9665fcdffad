"""Cluster status rows: the last capacity read of each cluster, its health, and the sync lease.

A failed read keeps the last good observation (marked stale by its age) and records the error,
so a dead cluster is visible as unhealthy instead of silently dropping out of the fleet.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from airflow_mcsched.access.breaker import Breaker, BreakerSettings
from airflow_mcsched.access.capacity import ClusterObservation, NodeObservation
from airflow_mcsched.service.cluster_store import audit
from airflow_mcsched.service.tables import ClusterStatusRow

SYNC_ACTOR = "mcsched-sync"

_NODE_FIELDS = (
    "name",
    "pool",
    "gpu_type",
    "cpu_milli_allocatable",
    "memory_mib_allocatable",
    "cpu_milli_requested",
    "memory_mib_requested",
    "gpu_milli_free",
    "ready",
    "schedulable",
)


def observation_to_json(obs: ClusterObservation) -> dict[str, Any]:
    """Compact form (one list per node) so 200-node clusters stay small in the DB."""
    return {
        "fields": list(_NODE_FIELDS),
        "nodes": [
            [list(v) if isinstance(v, tuple) else v for v in (getattr(n, f) for f in _NODE_FIELDS)] for n in obs.nodes
        ],
        "pods_running": obs.pods_running,
        "pods_pending": obs.pods_pending,
        "reservation_ids_seen": sorted(obs.reservation_ids_seen),
        "reservation_ids_waiting": sorted(obs.reservation_ids_waiting),
    }


def observation_from_json(cluster: str, observed_at: datetime, doc: dict[str, Any]) -> ClusterObservation:
    fields = doc["fields"]
    nodes = []
    for values in doc["nodes"]:
        kw = dict(zip(fields, values, strict=True))
        kw["gpu_milli_free"] = tuple(kw["gpu_milli_free"])
        nodes.append(NodeObservation(**kw))
    return ClusterObservation(
        cluster=cluster,
        observed_at=observed_at,
        nodes=tuple(nodes),
        pods_running=doc.get("pods_running", 0),
        pods_pending=doc.get("pods_pending", 0),
        reservation_ids_seen=frozenset(doc.get("reservation_ids_seen", ())),
        reservation_ids_waiting=frozenset(doc.get("reservation_ids_waiting", ())),
    )


@dataclass(frozen=True)
class ClusterStatus:
    """What the DB knows of a cluster's live state."""

    cluster: str
    healthy: bool
    error: str | None
    observed_at: datetime | None
    last_success_at: datetime | None
    consecutive_failures: int
    sync_seconds: float | None
    observation: ClusterObservation | None  # the last good read, possibly old

    def age_seconds(self, now: datetime) -> float | None:
        return None if self.last_success_at is None else (now - self.last_success_at).total_seconds()

    @property
    def free_gpus(self) -> int | None:
        if self.observation is None:
            return None
        return sum(n.whole_gpus_free for n in self.observation.nodes if n.usable)

    @property
    def health_word(self) -> str:
        if self.healthy:
            return "healthy"
        return f"unhealthy ({self.consecutive_failures}x): {(self.error or '')[:80]}"

    def summary(self) -> dict[str, Any]:
        obs = self.observation
        return {
            "healthy": self.healthy,
            "error": self.error,
            "observed_at": self.observed_at,
            "last_success_at": self.last_success_at,
            "consecutive_failures": self.consecutive_failures,
            "sync_seconds": self.sync_seconds,
            "nodes": len(obs.nodes) if obs else None,
            "nodes_not_ready": sum(1 for n in obs.nodes if not n.ready) if obs else None,
            "free_gpus": self.free_gpus,
            "pods_running": obs.pods_running if obs else None,
            "pods_pending": obs.pods_pending if obs else None,
        }


def _status_of(row: ClusterStatusRow) -> ClusterStatus:
    obs = None
    if row.observation is not None and row.last_success_at is not None:
        obs = observation_from_json(row.cluster_name, row.last_success_at, row.observation)
    return ClusterStatus(
        cluster=row.cluster_name,
        healthy=row.healthy,
        error=row.error,
        observed_at=row.observed_at,
        last_success_at=row.last_success_at,
        consecutive_failures=row.consecutive_failures,
        sync_seconds=row.sync_seconds,
        observation=obs,
    )


class StatusStore:
    def __init__(self, session: Session, breaker: BreakerSettings | None = None) -> None:
        self.session = session
        self.breaker = breaker or BreakerSettings()

    def all(self) -> dict[str, ClusterStatus]:
        return {r.cluster_name: _status_of(r) for r in self.session.scalars(select(ClusterStatusRow))}

    def _row(self, cluster: str) -> ClusterStatusRow:
        row = self.session.get(ClusterStatusRow, cluster)
        if row is None:
            row = ClusterStatusRow(cluster_name=cluster, healthy=False, consecutive_failures=0)
            self.session.add(row)
            self.session.flush()
        return row

    def acquire_lease(self, cluster: str, owner: str, seconds: float, now: datetime | None = None) -> bool:
        """Take (or renew) the right to sync `cluster`; one conditional UPDATE, so two API-server
        replicas never both win it."""
        now = now or datetime.now(UTC)
        self._row(cluster)
        result = self.session.execute(
            update(ClusterStatusRow)
            .where(
                ClusterStatusRow.cluster_name == cluster,
                or_(
                    ClusterStatusRow.lease_until.is_(None),
                    ClusterStatusRow.lease_until < now,
                    ClusterStatusRow.lease_owner == owner,
                ),
            )
            .values(lease_owner=owner, lease_until=now + timedelta(seconds=seconds))
            .execution_options(synchronize_session=False)
        )
        return result.rowcount == 1

    def may_read(self, cluster: str, now: datetime) -> bool:
        """False while the cluster's circuit breaker is open and cooling down: no read is sent."""
        row = self.session.get(ClusterStatusRow, cluster)
        return row is None or _breaker_of(row).may_read(now, self.breaker)

    def record(self, obs: ClusterObservation, sync_seconds: float | None = None) -> ClusterStatus:
        """Store a read; a cluster turning healthy or unhealthy, or its breaker opening or closing,
        also leaves an audit entry. While the breaker is open a good read is kept as the last
        observation but the cluster stays unhealthy, with the breaker's explanation as its error."""
        row = self._row(obs.cluster)
        breaker = _breaker_of(row).after_read(obs.healthy, obs.observed_at, self.breaker)
        open_because = breaker.explanation(obs.observed_at, self.breaker)
        healthy = obs.healthy and open_because is None
        error = obs.error if open_because is None else "; last error: ".join(filter(None, (open_because, obs.error)))
        if row.observed_at is not None and bool(row.healthy) != healthy:
            audit(self.session, SYNC_ACTOR, "cluster.health", "cluster", obs.cluster, healthy=healthy, error=error)
        if (row.breaker_opened_at is None) != (breaker.opened_at is None):
            audit(self.session, SYNC_ACTOR, "cluster.breaker", "cluster", obs.cluster,
                  state="closed" if breaker.opened_at is None else "open", failures=breaker.failures)  # fmt: skip
        row.observed_at = obs.observed_at
        row.sync_seconds = sync_seconds
        row.healthy, row.error = healthy, error
        row.breaker_failures, row.breaker_successes, row.breaker_opened_at = (
            breaker.failures,
            breaker.successes,
            breaker.opened_at,
        )
        if obs.healthy:
            row.consecutive_failures = 0
            row.last_success_at = obs.observed_at
            row.observation = observation_to_json(obs)
        else:
            row.consecutive_failures = (row.consecutive_failures or 0) + 1
        self.session.flush()
        return _status_of(row)


def _breaker_of(row: ClusterStatusRow) -> Breaker:
    return Breaker(row.breaker_failures or 0, row.breaker_successes or 0, row.breaker_opened_at)
