"""Build the global view (layer 2) from what the metadata DB holds: profiles plus last capacity reads."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from airflow_mcsched.access.capacity import ClusterObservation
from airflow_mcsched.service.cluster_store import ClusterStore
from airflow_mcsched.service.status_store import ClusterStatus, StatusStore
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
