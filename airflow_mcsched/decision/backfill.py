"""EASY backfill: the first request that cannot start gets a start time held on one pool; later,
smaller requests start only where they do not delay it. Large gangs are not starved by small jobs.

Expected ends of running work are the reservations' `expected_end` (granted as now + the request's
`expected_duration`, else the policy's default for its kind of work). Work past its expected end
is taken to end now. Pods of others (not ours) on a cluster have no known end and are never
counted as ending.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from heapq import heapify, heappop

from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.decision.node_choice import choose_nodes
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import PoolView


class HeadReservation:
    """The head's pool, its expected start, and that pool as it is expected to be at that start.

    A later request may take capacity in the pool if it ends before the start, or if the head
    still fits at the start with that request still running (`allows`); `commit` records it.
    """

    __slots__ = ("demand", "future", "pool", "request_id", "start")

    def __init__(self, request_id: str, pool: PoolView, start: datetime, demand: Demand, future: PoolCapacity) -> None:
        self.request_id = request_id
        self.pool = pool
        self.start = start
        self.demand = demand
        self.future = future

    def allows(self, pool: PoolView, pods: tuple[NodeAllocation, ...], end: datetime) -> bool:
        if pool.ordinal != self.pool.ordinal or end <= self.start:
            return True
        return choose_nodes(self.future.take(pods), self.demand) is not None

    def commit(self, pool: PoolView, pods: tuple[NodeAllocation, ...], end: datetime) -> None:
        if pool.ordinal == self.pool.ordinal and end > self.start:
            self.future = self.future.take(pods)

    def explain(self) -> str:
        return (
            f"held for {self.request_id}, expected to start here at {self.start.isoformat()}; "
            "this placement would run past that and take capacity it needs"
        )


def hold_for_head(ctx: RequestContext, pools: Iterable[PoolView]) -> HeadReservation | None:
    """The earliest start over the pools where only capacity stands in the way (ties: fleet order).

    Running work in those pools is replayed in order of its expected end, all pools at once, and the
    replay stops at the first end after which the request fits somewhere: the cost is the ends
    before the head's start, not all the work that runs.
    """
    now = ctx.now
    by_ordinal = {p.ordinal: p for p in pools}
    releases = [
        (max(r.expected_end, now), ordinal, r.id, r)
        for ordinal, pool in by_ordinal.items()
        for r in ctx.cycle.running_in(pool.key)
    ]
    heapify(releases)
    capacity = {ordinal: ctx.cycle.overlay.capacity(pool) for ordinal, pool in by_ordinal.items()}
    while releases:
        at = releases[0][0]
        freed: dict[int, list[NodeAllocation]] = {}
        while releases and releases[0][0] == at:
            _, ordinal, _, r = heappop(releases)
            freed.setdefault(ordinal, []).extend(r.pods)
        for ordinal in sorted(freed):
            capacity[ordinal] = capacity[ordinal].give_back(freed[ordinal])
        for ordinal in sorted(freed):
            if choose_nodes(capacity[ordinal], ctx.demand) is not None:
                return HeadReservation(ctx.request.id, by_ordinal[ordinal], at, ctx.demand, capacity[ordinal])
    return None
