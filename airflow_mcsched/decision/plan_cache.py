"""What the engine learns from one view and keeps while that view lives: plans, verdicts, fit answers.

A `GlobalView` never changes, so what the engine derives from the view, the policy and the plugins
alone holds for every cycle decided on that view object: the clusters' and pools' lasting verdicts,
the static scores and plans, the capacity left by reservations whose pods the view does not show
yet, and the fit verdicts remembered per capacity object. Only the clock-dependent cluster verdicts
(a capacity read grows stale) are kept per `now`.

Entries are found by the view's identity and checked against a weak reference to it, so an entry
goes when its view does and never serves another view that happens to reuse the address; at most
`MAX_VIEWS` views, `MAX_POLICIES` policy and plugin pairs per view, `MAX_CLOCKS` clock readings,
`MAX_PLANS` plans and `MAX_CHANGED` capacities per entry are kept, so memory stays bounded whatever
the caller does.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any

from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import GlobalView

MAX_VIEWS = 4
MAX_POLICIES = 4
MAX_CLOCKS = 4
MAX_PLANS = 4096
MAX_CHANGED = 16384


class SharedPlans:
    """Plans, setups and where rankings start, for one set of cluster verdicts; the candidate search
    fills them.

    A cycle holds the object it started with, so replacing it (when it grew past `MAX_PLANS`) never
    frees a plan a running cycle still uses.
    """

    __slots__ = ("plans", "ranking_starts", "setups")

    def __init__(self) -> None:
        self.plans: dict[Hashable, Any] = {}
        self.setups: dict[Hashable, Any] = {}
        self.ranking_starts: dict[Hashable, Any] = {}


class PlanMemory:
    """What one view, one policy and one set of plugins have taught the engine so far."""

    __slots__ = (
        "_changed",
        "_clocks",
        "_shared",
        "any_reserved",
        "data_sources",
        "fit_memo",
        "plugins",
        "policy",
        "staging",
        "weights",
    )

    def __init__(self, view: GlobalView, policy: object, plugins: object) -> None:
        self.policy = policy  # held so that its identity, the key, stays its own
        self.plugins = plugins
        self.any_reserved = any(c.reserved for c in view.clusters)
        self.weights: dict[Hashable, Any] = {}
        self.data_sources: dict[str, tuple[str, ...]] = {}
        self.staging: dict[Hashable, Any] = {}
        self.fit_memo: dict[Hashable, dict[int, tuple]] = {}
        self._changed: dict[tuple[int, tuple[NodeAllocation, ...], bool], tuple[PoolCapacity, PoolCapacity]] = {}
        self._clocks: dict[object, dict[str, Any]] = {}
        self._shared: dict[Hashable, SharedPlans] = {}

    def changed(
        self, capacity: PoolCapacity, pods: tuple[NodeAllocation, ...], *, ending: bool = False
    ) -> PoolCapacity:
        """`capacity.take(pods)` (or `give_back` when `ending`), one object per capacity object and
        pods: a cycle that places what an earlier one placed reaches the same capacity objects, and
        the fit verdicts, rankings and candidates remembered for them hold again."""
        key = (id(capacity), pods, ending)
        known = self._changed.get(key)
        if known is not None and known[0] is capacity:  # held below, so its id is still its own
            return known[1]
        if len(self._changed) >= MAX_CHANGED:
            self._changed.clear()
        after = capacity.give_back(pods) if ending else capacity.take(pods)
        self._changed[key] = (capacity, after)
        return after

    def cluster_verdicts(self, now: object, judge: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Request-independent cluster verdicts at `now` (they read the clock: staleness)."""
        verdicts = self._clocks.get(now)
        if verdicts is None:
            if len(self._clocks) >= MAX_CLOCKS:
                self._clocks.clear()
            verdicts = self._clocks[now] = judge()
        return verdicts

    def shared(self, verdicts: Hashable) -> SharedPlans:
        """Plans for this set of cluster verdicts (the clusters ruled out, with their messages)."""
        shared = self._shared.get(verdicts)
        if shared is None or len(shared.plans) + len(shared.setups) + len(shared.ranking_starts) > MAX_PLANS:
            if len(self._shared) >= MAX_CLOCKS:
                self._shared.clear()
            if shared is not None:
                self.fit_memo = {}
            shared = self._shared[verdicts] = SharedPlans()
        return shared


class _Entry:
    __slots__ = ("memories", "view")

    def __init__(self, view: weakref.ref[GlobalView]) -> None:
        self.view = view
        self.memories: dict[tuple[int, object], PlanMemory] = {}


_entries: dict[int, _Entry] = {}
_lock = threading.RLock()  # re-entrant: a view collected while the lock is held calls _forget


def _forget(ref: weakref.ref[GlobalView], key: int) -> None:
    with _lock:
        entry = _entries.get(key)
        if entry is not None and entry.view is ref:
            del _entries[key]


def plan_memory(view: GlobalView, policy: object, plugins: object) -> PlanMemory:
    """The memory for this view, policy and plugins (a new one the first time they meet)."""
    key = id(view)
    with _lock:
        entry = _entries.get(key)
        if entry is None or entry.view() is not view:
            if len(_entries) >= MAX_VIEWS:
                del _entries[next(iter(_entries))]  # the least recently used
            entry = _Entry(weakref.ref(view, lambda ref, key=key: _forget(ref, key)))
        else:
            del _entries[key]  # moved to the end: most recently used
        _entries[key] = entry
        memory_key = (id(policy), plugins)
        memory = entry.memories.get(memory_key)
        if memory is None or memory.policy is not policy:
            if len(entry.memories) >= MAX_POLICIES:
                entry.memories.clear()
            memory = entry.memories[memory_key] = PlanMemory(view, policy, plugins)
        return memory


def forget_all() -> None:
    """Drop everything remembered (tests compare decisions made with and without it)."""
    with _lock:
        _entries.clear()


def remembered_views() -> int:
    with _lock:
        return len(_entries)
