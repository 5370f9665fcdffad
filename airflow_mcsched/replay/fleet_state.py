"""The fleet under simulated time: each pool's live capacity, the jobs running, and a view on demand.

Jobs start and end on exact nodes (the node chooser's answer), so the capacity the engine sees is
what a capacity read would report. Running jobs are reservations whose pods the view shows, so the
engine counts them once and knows when they should end (for backfill).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from airflow_mcsched.access.capacity import ClusterObservation, NodeObservation
from airflow_mcsched.decision.reservation import Reservation
from airflow_mcsched.replay.fleet import ReplayFleet
from airflow_mcsched.view.builder import build_view
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import GlobalView, PoolKey, PoolView

EPOCH = datetime(2023, 1, 1, tzinfo=UTC)
"""Trace second 0 on the simulated clock."""


def at(seconds: float) -> datetime:
    return EPOCH + timedelta(seconds=seconds)


def _observations(fleet: ReplayFleet) -> list[ClusterObservation]:
    out = []
    for profile in fleet.profiles:
        nodes = []
        for pool in profile.node_pools:
            for n in fleet.nodes[(profile.name, pool.name)]:
                nodes.append(
                    NodeObservation(
                        name=n.name,
                        pool=pool.name,
                        gpu_type=pool.gpu_type,
                        cpu_milli_allocatable=n.cpu_milli_allocatable,
                        memory_mib_allocatable=n.memory_mib_allocatable,
                        cpu_milli_requested=0,
                        memory_mib_requested=0,
                        gpu_milli_free=n.gpu_milli_free,
                    )
                )
        out.append(ClusterObservation(profile.name, EPOCH, tuple(nodes)))
    return out


class FleetState:
    """Live capacity per pool (copy-on-write objects, replaced as jobs start and end) and running jobs."""

    def __init__(self, fleet: ReplayFleet) -> None:
        self.fleet = fleet
        self._base = build_view(fleet.profiles, _observations(fleet), EPOCH)
        self.pools: tuple[PoolView, ...] = self._base.pools
        self.capacity: dict[PoolKey, PoolCapacity] = {p.key: p.capacity for p in self.pools}
        self.running: dict[str, Reservation] = {}
        self.allocated_gpus = 0.0
        self._pool_views: dict[PoolKey, PoolView] = {p.key: p for p in self.pools}
        self._seen: dict[str, set[str]] = {c.name: set() for c in self._base.clusters}

    def pool_view(self, cluster: str, pool: str) -> PoolView:
        return self._base.pool(cluster, pool)

    def start(self, reservation: Reservation) -> None:
        self.capacity[reservation.key] = self.capacity[reservation.key].take(reservation.pods)
        self.running[reservation.request_id] = reservation
        self._seen[reservation.cluster].add(reservation.id)
        self.allocated_gpus += reservation.gpu_equivalent

    def end(self, job: str) -> Reservation:
        reservation = self.running.pop(job)
        self._seen[reservation.cluster].discard(reservation.id)
        self.capacity[reservation.key] = self.capacity[reservation.key].give_back(reservation.pods)
        self.allocated_gpus -= reservation.gpu_equivalent
        return reservation

    def _pool_view(self, base: PoolView) -> PoolView:
        """The pool with its live capacity; the same object until that capacity changes."""
        known = self._pool_views[base.key]
        capacity = self.capacity[base.key]
        if known.capacity is not capacity:
            known = self._pool_views[base.key] = replace(base, capacity=capacity)
        return known

    def view(self, now: datetime) -> GlobalView:
        """The global view now: live capacity, and every running job's pod shown (not counted twice)."""
        clusters = tuple(
            c.read_again(
                tuple(self._pool_view(p) for p in c.pools),
                observed_at=now,
                reservation_ids_seen=frozenset(self._seen[c.name]),
            )
            for c in self._base.clusters
        )
        return GlobalView(now, clusters)
