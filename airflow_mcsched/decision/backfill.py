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


def _start_on(ctx: RequestContext, pool: PoolView) -> tuple[datetime, PoolCapacity] | None:
    """Earliest time the request fits on `pool` as running work ends, and the pool at that time."""
    now = ctx.now
    releases = sorted(ctx.cycle.running_in(pool.key), key=lambda r: (max(r.expected_end, now), r.id))
    if not releases:
        return None
    capacity = ctx.cycle.overlay.capacity(pool)

    def after(k: int) -> PoolCapacity:
        return capacity.give_back(a for r in releases[:k] for a in r.pods)

    if choose_nodes(after(len(releases)), ctx.demand) is None:
        return None
    lo, hi = 1, len(releases)  # fit is monotone in k: ends only ever free capacity
    while lo < hi:
        mid = (lo + hi) // 2
        if choose_nodes(after(mid), ctx.demand) is None:
            lo = mid + 1
        else:
            hi = mid
    start = max(releases[lo - 1].expected_end, now)
    while lo < len(releases) and max(releases[lo].expected_end, now) <= start:
        lo += 1  # everything ending by then has ended
    return start, after(lo)


def hold_for_head(ctx: RequestContext, pools: Iterable[PoolView]) -> HeadReservation | None:
    """The earliest start over the pools where only capacity stands in the way (ties: fleet order)."""
    best: tuple[datetime, int, PoolView, PoolCapacity] | None = None
    for pool in pools:
        found = _start_on(ctx, pool)
        if found is None:
            continue
        start, future = found
        if best is None or (start, pool.ordinal) < best[:2]:
            best = (start, pool.ordinal, pool, future)
    if best is None:
        return None
    start, _, pool, future = best
    return HeadReservation(ctx.request.id, pool, start, ctx.demand, future)
