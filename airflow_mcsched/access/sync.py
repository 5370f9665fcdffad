"""The capacity sync loop: read every cluster's nodes and pods and record what was seen.

It runs inside the API server (or as `mcsched sync`). Clusters are read in parallel, each
bounded in time; with several API-server replicas a lease per cluster makes one replica read it
at a time. Persistence and Kubernetes clients come in through two small protocols, so the loop
itself is the same for the metadata DB, for tests and for benchmarks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from airflow_mcsched.access.capacity import ClusterObservation
from airflow_mcsched.access.kube_reader import read_cluster
from airflow_mcsched.access.profiles import ClusterProfile

log = logging.getLogger(__name__)


class SyncLedger(Protocol):
    """Where the sync learns which clusters exist, takes its lease, and records what it read."""

    def profiles(self) -> list[ClusterProfile]: ...

    def acquire(self, cluster: str, owner: str, seconds: float) -> bool: ...

    def record(self, observation: ClusterObservation, seconds: float) -> None: ...


@runtime_checkable
class GatedLedger(Protocol):
    """A ledger that keeps a circuit breaker per cluster (`access.breaker`): no read while it is open."""

    def may_read(self, cluster: str, now: datetime) -> bool: ...


ClientFactory = Callable[[ClusterProfile], Any]  # profile -> kubernetes ApiClient


@dataclass(frozen=True)
class SyncOutcome:
    cluster: str
    synced: bool  # False when another replica holds the lease, or the cluster's breaker is open
    healthy: bool = False
    seconds: float = 0.0
    error: str | None = None


class CapacitySync:
    def __init__(
        self,
        ledger: SyncLedger,
        client_for: ClientFactory,
        owner: str,
        timeout: float = 10.0,
        lease_seconds: float = 60.0,
        workers: int = 8,
        on_round: Callable[[list[SyncOutcome]], None] | None = None,
    ) -> None:
        self.ledger = ledger
        self.client_for = client_for
        self.owner = owner
        self.timeout = timeout
        self.lease_seconds = lease_seconds
        self.workers = workers
        self.on_round = on_round  # e.g. run an admission cycle on the fresh view

    def _sync_one(self, profile: ClusterProfile) -> SyncOutcome:
        if not self.ledger.acquire(profile.name, self.owner, self.lease_seconds):
            return SyncOutcome(profile.name, synced=False)
        if isinstance(self.ledger, GatedLedger) and not self.ledger.may_read(profile.name, datetime.now(UTC)):
            return SyncOutcome(profile.name, synced=False, error="circuit breaker open: not read this round")
        started = time.monotonic()
        try:
            obs = read_cluster(self.client_for(profile), profile, self.timeout)
        except Exception as err:  # e.g. a broken connection definition: still a fact about the cluster
            obs = ClusterObservation(profile.name, datetime.now(UTC), error=f"{type(err).__name__}: {err}")
        seconds = time.monotonic() - started
        self.ledger.record(obs, seconds)
        if obs.error:
            log.warning("cluster %s unhealthy: %s", profile.name, obs.error)
        return SyncOutcome(profile.name, True, obs.healthy, seconds, obs.error)

    def sync_once(self, clusters: list[str] | None = None) -> list[SyncOutcome]:
        profiles = [p for p in self.ledger.profiles() if clusters is None or p.name in clusters]
        if not profiles:
            return []
        with ThreadPoolExecutor(max_workers=min(self.workers, len(profiles))) as pool:
            return list(pool.map(self._sync_one, profiles))

    def run(self, interval: float, stop: threading.Event) -> None:
        """Sync every `interval` seconds until `stop` is set; a failing round never ends the loop."""
        while not stop.is_set():
            try:
                outcomes = self.sync_once()
                if self.on_round and any(o.synced for o in outcomes):
                    self.on_round(outcomes)
            except Exception:
                log.exception("capacity sync round failed; retrying in %.0fs", interval)
            stop.wait(interval)
