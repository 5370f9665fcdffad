"""Best-first order of a plan's pools for one demand, kept up to date across the requests of a cycle.

A heap holds each eligible pool at its most optimistic known total: first its static score plus
the dynamic scores' maximum, then plus their upper bounds on its capacity, then its exact total.
Popping refines the top until the `want` best are exact, feasible and accepted by the request's
own checks; every other pool is provably no better. When a pool's capacity changes (a grant, an
eviction), it re-enters at its most optimistic value, so the order is never stale.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush

from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.outcome import Rejection
from airflow_mcsched.decision.pool_judgement import Feasible, Setup, exact, live_rejection, optimistic, weighted

_FRESH, _BOUNDED, _EXACT, _INFEASIBLE = 0, 1, 2, 3


class PoolRanking:
    __slots__ = ("_heap", "_level", "_static", "_synced", "_version")

    def __init__(self, setup: Setup, synced: int) -> None:
        bound = setup.plan.dynamic_bound
        self._static = {e[1]: e for e in setup.plan.eligible}
        self._heap = [(neg_static - bound, ordinal, 0) for neg_static, ordinal, *_ in setup.plan.eligible]
        heapify(self._heap)
        self._version = dict.fromkeys(self._static, 0)
        self._level = dict.fromkeys(self._static, _FRESH)
        self._synced = synced

    def _sync(self, log: list[int], bound: float) -> None:
        """Pools whose capacity changed since the last use go back in at their most optimistic value."""
        if self._synced == len(log):
            return
        for ordinal in sorted(set(log[self._synced :])):
            entry = self._static.get(ordinal)
            if entry is not None:
                self._version[ordinal] += 1
                self._level[ordinal] = _FRESH
                heappush(self._heap, (entry[0] - bound, ordinal, self._version[ordinal]))
        self._synced = len(log)

    def best(self, ctx: RequestContext, setup: Setup, want: int) -> list[Feasible]:
        cycle = ctx.cycle
        changed = cycle.overlay.by_ordinal
        self._sync(cycle.overlay.log, setup.plan.dynamic_bound)
        heap, level, version = self._heap, self._level, self._version
        found: list[Feasible] = []
        put_back = []
        dynamic = setup.plan.dynamic_scores
        while heap and len(found) < want:
            entry = heappop(heap)
            _, ordinal, entry_version = entry
            if entry_version != version[ordinal]:
                continue  # superseded by a newer entry for the same pool
            neg_static, _, cluster, pool, static_values = self._static[ordinal]
            capacity = changed.get(ordinal) or pool.capacity
            state = level[ordinal]
            # Refine in place while the entry stays on top; push it back as soon as it does not.
            if state == _FRESH:
                level[ordinal] = state = _BOUNDED
                entry = (neg_static - optimistic(ctx, setup, cluster, pool, capacity), ordinal, entry_version)
                if heap and entry > heap[0]:
                    heappush(heap, entry)
                    continue
            pods, values = exact(ctx, setup, cluster, pool, capacity)
            if isinstance(pods, Rejection):
                level[ordinal] = _INFEASIBLE  # out until its capacity changes
                continue
            total = -(neg_static - weighted(values, dynamic))
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
        ranking = rankings[setup.ranking_key] = PoolRanking(setup, len(ctx.cycle.overlay.log))
    return ranking
