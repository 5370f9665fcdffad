"""Tentative allocations over an immutable view, so admitting a whole queue sees what it handed out."""

from __future__ import annotations

from collections.abc import Iterable

from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import GlobalView, PoolKey, PoolView


class CapacityOverlay:
    """Copy-on-write capacity per pool on top of a `GlobalView`; the view itself is never changed.

    Only pools that received an allocation are copied. `version` grows with every change, so
    callers can cache answers that depend on capacity.
    """

    __slots__ = ("_changed", "by_ordinal", "log", "version", "view")

    def __init__(self, view: GlobalView) -> None:
        self.view = view
        self._changed: dict[PoolKey, PoolCapacity] = {}
        self.by_ordinal: dict[int, PoolCapacity] = {}
        """Changed capacity by the pool's fleet position: the engine's hot loop reads this directly."""
        self.log: list[int] = []
        """Fleet positions of the pools changed, in order (with repeats): what changed since a given point."""
        self.version = 0

    def capacity(self, pool: PoolView) -> PoolCapacity:
        changed = self._changed.get((pool.cluster, pool.name))
        return pool.capacity if changed is None else changed

    def set_capacity(self, pool: PoolView, capacity: PoolCapacity) -> None:
        self._changed[(pool.cluster, pool.name)] = capacity
        self.by_ordinal[pool.ordinal] = capacity
        self.log.append(pool.ordinal)
        self.version += 1

    def take(self, pool: PoolView, allocations: Iterable[NodeAllocation]) -> None:
        self.set_capacity(pool, self.capacity(pool).take(allocations))

    def give_back(self, pool: PoolView, allocations: Iterable[NodeAllocation]) -> None:
        self.set_capacity(pool, self.capacity(pool).give_back(allocations))

    @property
    def changed_pools(self) -> tuple[PoolKey, ...]:
        return tuple(self._changed)

    def snapshot(self) -> GlobalView:
        """The view with every tentative allocation applied, as a new immutable `GlobalView`."""
        return self.view.with_capacity(self._changed)
