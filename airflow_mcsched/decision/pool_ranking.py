"""Best-first order of a plan's pools for one demand, kept up to date across the requests of a cycle.

A heap holds each eligible pool at its most optimistic known total: first its static score plus
the dynamic scores' maximum, then plus their upper bounds on its capacity, then its exact total.
Popping refines the top until the `want` best are exact, feasible and accepted by the request's
own checks; every other pool is provably no better. When a pool's capacity changes (a grant, an
eviction), it re-enters at its most optimistic value, so the order is never stale.
"""

from __future__ import annotations

from collections.abc import Iterable
from heapq import heapify, heappop, heappush

from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.outcome import Rejection
from airflow_mcsched.decision.pool_judgement import (
    Feasible,
    Setup,
    bound_in_any_cycle,
    exact,
    live_rejection,
    optimistic,
)
from airflow_mcsched.view.overlay import CapacityOverlay
from airflow_mcsched.view.pool_capacity import PoolCapacity

_FRESH, _BOUNDED, _EXACT, _INFEASIBLE = 0, 1, 2, 3

_Start = tuple[tuple[tuple[float, int, int], ...], dict[int, int], dict[int, int], dict[int, PoolCapacity]]
"""A ranking's heap, versions, levels and the capacity each refined pool was judged on."""


class PoolRanking:
    """One plan's pools for one demand, best first, for the requests of one cycle.

    Its state after its first use (the heap, each pool's level, and the capacity each refined pool
    was judged on) is kept with the plan: a later cycle on the same view starts from it, and only
    pools whose capacity object differs by then go back in at their most optimistic value. A
    cycle's own setup (one with a per-cycle score) leaves its refined pools at bounds that hold in
    any cycle, so its template's later rankings start from them too (`start`).
    """

    __slots__ = ("_heap", "_judged_on", "_level", "_plan", "_static", "_synced", "_version")

    def __init__(self, setup: Setup, overlay: CapacityOverlay, start: _Start | None) -> None:
        self._plan = setup.plan  # held: rankings are found by the plan's identity
        self._static = setup.plan.by_ordinal
        self._synced = len(overlay.log)
        self._judged_on: dict[int, PoolCapacity] = dict(start[3]) if start is not None else {}
        stale = self._stale(overlay, self._judged_on) if start is not None else []
        if start is None or 2 * len(stale) > len(self._judged_on):
            # nothing to start from, or mostly pools whose capacity changed (a new capacity read):
            # starting afresh costs less than putting each of them back
            self._heap = list(setup.plan.start_heap)  # a heap already: copied, not rebuilt
            self._version = dict(setup.plan.zeros)
            self._level = dict(setup.plan.zeros)  # _FRESH
            self._judged_on = {}
            return
        heap, version, level, _ = start
        self._heap, self._version, self._level = list(heap), dict(version), dict(level)
        self._refresh(stale, setup.plan.dynamic_bound)

    def _stale(self, overlay: CapacityOverlay, ordinals: Iterable[int]) -> list[int]:
        """Of these pools, the refined ones whose capacity is no longer the object they were judged on.

        A pool still at its most optimistic value is never stale: that value does not read capacity.
        """
        judged_on, changed, static = self._judged_on, overlay.by_ordinal, self._static
        return [
            o
            for o in ordinals
            if o in judged_on and (changed.get(o) or overlay.capacity(static[o][3])) is not judged_on[o]
        ]

    def _refresh(self, ordinals: Iterable[int], bound: float) -> None:
        """These pools go back in at their most optimistic value (in any order: entries never tie)."""
        for ordinal in ordinals:
            self._version[ordinal] += 1
            self._level[ordinal] = _FRESH
            del self._judged_on[ordinal]
            heappush(self._heap, (self._static[ordinal][0] - bound, ordinal, self._version[ordinal]))

    def start(self, ctx: RequestContext, setup: Setup) -> _Start:
        """Where a ranking of the same plan and demand in a later cycle starts from.

        A cycle's own setup ranks on totals that hold this cycle's values (and a bound may be an
        exact total already known): each pool refined so far goes back at its bound in any cycle,
        which is still above its exact total, so the order stays sound for every setup of the
        template, whatever the cycle.
        """
        if not setup.per_cycle_at:
            return (tuple(self._heap), dict(self._version), dict(self._level), dict(self._judged_on))
        level, version, static = dict(self._level), self._version, self._static
        refined = {o for o, at in level.items() if at in (_BOUNDED, _EXACT)}
        heap = [e for e in self._heap if e[1] not in refined or e[2] != version[e[1]]]
        for o in refined:
            _, _, cluster, pool, _ = static[o]
            bound = bound_in_any_cycle(ctx, setup, cluster, pool, self._judged_on[o])
            heap.append((static[o][0] - bound, o, version[o]))
            level[o] = _BOUNDED
        heapify(heap)
        return (tuple(heap), dict(version), level, dict(self._judged_on))

    def _sync(self, overlay: CapacityOverlay, bound: float) -> None:
        """Refined pools whose capacity changed since the last use go back in at their most optimistic
        value: those the log names, or, when it names more, those whose capacity object differs."""
        log, since = overlay.log, self._synced
        if since == len(log):
            return
        self._synced = len(log)
        named = set(log[since:]) if len(log) - since < len(self._judged_on) else self._judged_on
        self._refresh(self._stale(overlay, named), bound)

    def best(self, ctx: RequestContext, setup: Setup, want: int) -> list[Feasible]:
        overlay = ctx.cycle.overlay
        changed = overlay.by_ordinal
        self._sync(overlay, setup.plan.dynamic_bound)
        heap, level, version, judged_on = self._heap, self._level, self._version, self._judged_on
        found: list[Feasible] = []
        put_back = []
        while heap and len(found) < want:
            entry = heappop(heap)
            _, ordinal, entry_version = entry
            if entry_version != version[ordinal]:
                continue  # superseded by a newer entry for the same pool
            neg_static, _, cluster, pool, static_values = self._static[ordinal]
            capacity = changed.get(ordinal) or overlay.capacity(pool)
            state = level[ordinal]
            judged_on[ordinal] = capacity
            # Refine in place while the entry stays on top; push it back as soon as it does not.
            if state == _FRESH:
                bound = optimistic(ctx, setup, cluster, pool, capacity)
                if bound < 0:  # known not to fit: out until its capacity changes
                    level[ordinal] = _INFEASIBLE
                    continue
                level[ordinal] = state = _BOUNDED
                entry = (neg_static - bound, ordinal, entry_version)
                if heap and entry > heap[0]:
                    heappush(heap, entry)
                    continue
            (pods, values), dynamic_total = exact(ctx, setup, cluster, pool, capacity)
            if isinstance(pods, Rejection):
                level[ordinal] = _INFEASIBLE  # out until its capacity changes
                continue
            total = -(neg_static - dynamic_total)
            if state == _BOUNDED:
                level[ordinal] = _EXACT
                entry = (-total, ordinal, entry_version)
                if heap and entry > heap[0]:
                    heappush(heap, entry)
                    continue
            put_back.append(entry)
            if live_rejection(ctx, setup, cluster, pool, capacity, pods) is None:
                found.append(Feasible(cluster, pool, static_values, capacity, pods, total, values))
        for entry in put_back:
            heappush(heap, entry)
        return found


def ranking_for(ctx: RequestContext, setup: Setup) -> PoolRanking:
    rankings = ctx.cycle.rankings
    ranking = rankings.get(setup.ranking_key)
    if ranking is None:
        start = None if setup.start_key is None else ctx.cycle.shared.ranking_starts.get(setup.start_key)
        ranking = rankings[setup.ranking_key] = PoolRanking(setup, ctx.cycle.overlay, start)
    return ranking


def remember_start(ctx: RequestContext, setup: Setup, ranking: PoolRanking) -> None:
    """After a ranking's first use: later rankings of its plan and demand, in this cycle (a cycle's
    own setups of one template) and in later ones on the view, start from where it is."""
    if setup.start_key is None:
        return  # a per-cycle bound may read the cycle: the next cycle ranks afresh
    starts = ctx.cycle.shared.ranking_starts
    if setup.start_key not in starts:
        starts[setup.start_key] = ranking.start(ctx, setup)
