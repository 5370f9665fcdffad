"""The capacity sync's ledger in the metadata DB: each call is its own short transaction."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime

from sqlalchemy.orm import Session

from airflow_mcsched.access.breaker import BreakerSettings
from airflow_mcsched.access.capacity import ClusterObservation
from airflow_mcsched.access.profiles import ClusterProfile
from airflow_mcsched.service.cluster_store import ClusterStore
from airflow_mcsched.service.status_store import StatusStore

SessionFactory = Callable[[], AbstractContextManager[Session]]


class DbSyncLedger:
    def __init__(self, session_factory: SessionFactory, breaker: BreakerSettings | None = None) -> None:
        self.session_factory = session_factory
        self.breaker = breaker

    def profiles(self) -> list[ClusterProfile]:
        with self.session_factory() as session:
            return ClusterStore(session).list()

    def acquire(self, cluster: str, owner: str, seconds: float) -> bool:
        with self.session_factory() as session:
            return StatusStore(session, self.breaker).acquire_lease(cluster, owner, seconds)

    def may_read(self, cluster: str, now: datetime) -> bool:
        with self.session_factory() as session:
            return StatusStore(session, self.breaker).may_read(cluster, now)

    def record(self, observation: ClusterObservation, seconds: float) -> None:
        with self.session_factory() as session:
            StatusStore(session, self.breaker).record(observation, seconds)
