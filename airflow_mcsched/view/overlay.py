"""Tentative allocations over an immutable view, so admitting a whole queue sees what it handed out."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import GlobalView, PoolKey, PoolView


class CapacityOverlay:
    """Copy-on-write capacity per pool on top of a `GlobalView`; the view itself is never changed.

    Only pools that received an allocation are copied, and a `defer`red change only when the pool
    is first read. `log` names every change in order (and `version` counts them), so callers can
    cache answers that depend on capacity.
    """

    __slots__ = ("_changed", "_deferred", "_pools", "by_ordinal", "log", "view")

    def __init__(self, view: GlobalView) -> None:
        self.view = view
        self._pools = view.pools_by_key
        self._changed: dict[PoolKey, PoolCapacity] = {}
        self._deferred: dict[PoolKey, tuple[PoolView, Callable[[], PoolCapacity]]] = {}
        self.by_ordinal: dict[int, PoolCapacity] = dict(view.capacity_by_ordinal)
        """Capacity by the pool's fleet position, changed or not, except pools with a deferred change
        not worked out yet: the engine's hot loops read this directly, and `capacity` only when it
        holds nothing (a deferred pool, or a position another view's plan names that this one lacks)."""
        self.log: list[int] = []
        """Fleet positions of the pools changed, in order (with repeats): what changed since a given point."""

    @property
    def version(self) -> int:
        """Changes so far: grows with every one."""
        return len(self.log)

    def capacity(self, pool: PoolView) -> PoolCapacity:
        key = (pool.cluster, pool.name)
        changed = self._changed.get(key)
        if changed is not None:
            return changed
        if key in self._deferred:
            return self._settle(key)
        # this view's own: `pool` may come from another view of the same layout (plans are shared)
        return self._pools[key].capacity

    def _settle(self, key: PoolKey) -> PoolCapacity:
        """Work out a deferred change: the pool's capacity changed when it was deferred, not now."""
        pool, compute = self._deferred.pop(key)
        capacity = self._changed[key] = self.by_ordinal[pool.ordinal] = compute()
        return capacity

    def set_capacity(self, pool: PoolView, capacity: PoolCapacity) -> None:
        key = (pool.cluster, pool.name)
        self._deferred.pop(key, None)
        self._changed[key] = capacity
        self.by_ordinal[pool.ordinal] = capacity
        self.log.append(pool.ordinal)

    def defer(self, pool: PoolView, compute: Callable[[], PoolCapacity]) -> None:
        """The untouched pool's capacity is now `compute()` (worked out from the view's own), called
        only if and when the pool is read: a cycle that never looks at the pool never pays for the copy."""
        key = (pool.cluster, pool.name)
        if key in self._changed or key in self._deferred:
            raise ValueError(f"pool {pool.cluster}/{pool.name} has changed already; take from it instead")
        self._deferred[key] = (pool, compute)
        self.by_ordinal.pop(pool.ordinal, None)
        self.log.append(pool.ordinal)

    def take(self, pool: PoolView, allocations: Iterable[NodeAllocation], *, anywhere: bool = False) -> None:
        self.set_capacity(pool, self.capacity(pool).take(allocations, anywhere=anywhere))

    def give_back(self, pool: PoolView, allocations: Iterable[NodeAllocation]) -> None:
        self.set_capacity(pool, self.capacity(pool).give_back(allocations))

    def _settle_all(self) -> None:
        for key in list(self._deferred):
            self._settle(key)

    @property
    def changed_pools(self) -> tuple[PoolKey, ...]:
        self._settle_all()
        return tuple(self._changed)

    def snapshot(self) -> GlobalView:
        """The view with every tentative allocation applied, as a new immutable `GlobalView`."""
        self._settle_all()
        return self.view.with_capacity(self._changed)
