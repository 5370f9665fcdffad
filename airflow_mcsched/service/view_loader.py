"""Build the global view (layer 2) from what the metadata DB holds: profiles plus last capacity reads."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from sqlalchemy import Text, cast, func, select
from sqlalchemy.orm import Session

from airflow_mcsched.access.capacity import ClusterObservation
from airflow_mcsched.service.cluster_store import ClusterStore
from airflow_mcsched.service.status_store import ClusterStatus, StatusStore
from airflow_mcsched.service.tables import ClusterRow, ClusterStatusRow
from airflow_mcsched.view import GlobalView, build_view


def _observation(status: ClusterStatus) -> ClusterObservation | None:
    """An unhealthy cluster enters the view with its error and no capacity, so decisions can say why."""
    if not status.healthy:
        return ClusterObservation(status.cluster, status.observed_at or datetime.now(UTC), error=status.error)
    return status.observation


def load_view(session: Session, now: datetime | None = None) -> GlobalView:
    profiles = ClusterStore(session).list()
    observations = [o for o in map(_observation, StatusStore(session).all().values()) if o is not None]
    return build_view(profiles, observations, now or datetime.now(UTC))


_cache_lock = threading.Lock()
_cached: tuple[tuple, GlobalView] | None = None


def _fingerprint(session: Session) -> tuple:
    """What the view is built from, without the observations themselves: each profile's generation
    and each status row's times, health and the length of its stored read. A capacity read or a
    profile change alters it; between syncs it stays the same."""
    clusters = session.execute(
        select(ClusterRow.name, ClusterRow.generation, ClusterRow.updated_at, ClusterRow.state).order_by(
            ClusterRow.name
        )
    ).all()
    statuses = session.execute(
        select(
            ClusterStatusRow.cluster_name,
            ClusterStatusRow.observed_at,
            ClusterStatusRow.last_success_at,
            ClusterStatusRow.healthy,
            ClusterStatusRow.error,
            ClusterStatusRow.consecutive_failures,
            func.length(cast(ClusterStatusRow.observation, Text)),
        ).order_by(ClusterStatusRow.cluster_name)
    ).all()
    return (str(session.get_bind().url), tuple(map(tuple, clusters)), tuple(map(tuple, statuses)))


def cached_view(session: Session, now: datetime) -> GlobalView:
    """The view for an admission cycle: the same object as the last cycle's while nothing it is
    built from changed, so a cycle costs no JSON decoding between capacity reads and the engine
    can keep what it derived from the view. Its `taken_at` is when it was built; the engine judges
    staleness by each cluster's `observed_at` against the cycle's own time."""
    global _cached
    key = _fingerprint(session)
    with _cache_lock:
        if _cached is not None and _cached[0] == key:
            return _cached[1]
    view = load_view(session, now)
    with _cache_lock:
        _cached = (key, view)
    return view
