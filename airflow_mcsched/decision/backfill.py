"""Backfill: the first requests that cannot start (up to the policy's `backfill_heads`, in admission
order) each get a start time held on one pool; later requests start only where they delay none of
them. Large gangs are not starved by small jobs, nor by another blocked request taking the one
hold (EASY backfill is the case of one head; more heads approach conservative backfill). Beyond
those, blocked requests asking 2 GPUs or more get holds too (up to `backfill_large_heads` more):
a small request starts as soon as any GPU frees, a large one only if it is kept from the small
ones, so holding room for every blocked small request would only slow the queue down.

Expected ends of running work are the reservations' `expected_end` (granted as now + the request's
`expected_duration`, else the policy's default for its kind of work). Work past its expected end
is taken to end now. Pods of others (not ours) on a cluster have no known end and are never
counted as ending. A later head's start is found with the earlier heads' holds in place (each
takes its pods from its start to its expected end), so two heads are never promised one node.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from datetime import datetime
from heapq import heapify, heappop, heappush, heapreplace

from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.decision.node_choice import choose_nodes
from airflow_mcsched.decision.plan_cache import MAX_POOLS
from airflow_mcsched.decision.reservation import Reservation
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.bounded_table import kept_for
from airflow_mcsched.view.node_capacity import NodeCapacity, give_back_in_place
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import PoolKey, PoolView


class HeadReservation:
    """A head's pool, its expected start and end, and that pool as it is expected to be at that start.

    A later request may take capacity in the pool if it ends before the start (or starts after the
    end), or if the head still fits at the start with that request still running (`allows`);
    `commit` records it.
    """

    __slots__ = ("_allowed", "demand", "end", "future", "pool", "request_id", "start")

    def __init__(
        self,
        request_id: str,
        pool: PoolView,
        start: datetime,
        demand: Demand,
        future: PoolCapacity,
        end: datetime | None = None,
    ) -> None:
        self.request_id = request_id
        self.pool = pool
        self.start = start
        self.demand = demand
        self.future = future
        self.end = end
        self._allowed: dict[tuple[NodeAllocation, ...], bool] = {}
        """`allows`' answers on `future` by the pods asked about: the requests of a long queue that
        would run past the start ask about the same few placements again and again."""

    def _overlaps(self, pool: PoolView, start: datetime | None, end: datetime) -> bool:
        if pool.ordinal != self.pool.ordinal or end <= self.start:
            return False
        return start is None or self.end is None or start < self.end

    def allows(
        self, pool: PoolView, pods: tuple[NodeAllocation, ...], end: datetime, start: datetime | None = None
    ) -> bool:
        """May work on `pods` from `start` (None = now) to `end` run without delaying this head?"""
        if not self._overlaps(pool, start, end):
            return True
        allowed = self._allowed.get(pods)
        if allowed is None:
            allowed = self._allowed[pods] = choose_nodes(self.future.take(pods), self.demand) is not None
        return allowed

    def commit(
        self, pool: PoolView, pods: tuple[NodeAllocation, ...], end: datetime, start: datetime | None = None
    ) -> None:
        if self._overlaps(pool, start, end):
            self.future = self.future.take(pods)
            self._allowed = {}

    def explain(self) -> str:
        return (
            f"held for {self.request_id}, expected to start here at {self.start.isoformat()}; "
            "this placement would run past that and take capacity it needs"
        )


class HeldRoom:
    """Every head of the cycle, in admission order: work may start only where all of them allow it."""

    __slots__ = ("_by_pool", "_refused_by", "commits", "heads")

    def __init__(self, heads: Iterable[HeadReservation] = ()) -> None:
        self.heads: list[HeadReservation] = list(heads)
        self._by_pool: dict[int, list[HeadReservation]] = {}
        """The heads by the fleet position of their pool, in admission order: a head allows anything
        in another pool, and every fitted pool of the cycle is asked."""
        for head in self.heads:
            self._by_pool.setdefault(head.pool.ordinal, []).append(head)
        self._refused_by: HeadReservation | None = None
        self.commits = 0
        """Placements committed so far: what the heads allow changes with each (preemption.py)."""

    def allows(self, pool: PoolView, pods: tuple[NodeAllocation, ...], end: datetime) -> bool:
        for head in self._by_pool.get(pool.ordinal, ()):
            if not head.allows(pool, pods, end):
                self._refused_by = head
                return False
        return True

    def commit(self, pool: PoolView, pods: tuple[NodeAllocation, ...], end: datetime) -> None:
        self.commits += 1
        for head in self._by_pool.get(pool.ordinal, ()):
            head.commit(pool, pods, end)

    def explain(self) -> str:
        """Why the last placement `allows` refused waits (the head it would have delayed)."""
        head = self._refused_by or self.heads[0]
        return head.explain()


def hold_for_head(
    ctx: RequestContext, pools: Iterable[PoolView], held: Iterable[HeadReservation] = ()
) -> HeadReservation | None:
    """The earliest start over the pools where only capacity stands in the way (ties: fleet order),
    with the holds of earlier heads (`held`) in place.

    Running work in those pools is replayed in order of its expected end, all pools at once, and the
    replay stops at the first end after which the request fits somewhere without delaying an
    earlier head: the cost is the ends before the head's start, not all the work that runs.

    Each pool's ends are sorted once per cycle (`_ends_in`), and the replay merges the pools' next
    ends in a heap of one entry per pool: on a full fleet thousands of reservations run in a
    request's pools, and a heap of all their ends, made for every head, was a quarter of the cycle.
    At one instant the ends come first, pool by pool in fleet order and in id order within a pool,
    then the holds of earlier heads that end, then those that start.
    """
    now = ctx.now
    by_ordinal = {p.ordinal: p for p in pools}
    ends: dict[int, list[_End]] = {}
    fronts: list[tuple[datetime, int, int]] = []  # (a pool's next end, its fleet position, its place in `ends`)
    for ordinal, pool in by_ordinal.items():
        pool_ends = _ends_in(ctx, pool)
        if pool_ends:
            ends[ordinal] = pool_ends
            fronts.append((pool_ends[0][0], ordinal, 0))
    heapify(fronts)
    # (time, kind, ordinal, tie, payload): kind 1 = a held head's hold ends, 2 = a held head starts
    # (takes its pods); at one instant ends come before starts.
    holds: list[tuple] = []
    earlier = [h for h in held if h.pool.ordinal in by_ordinal]
    for i, h in enumerate(earlier):
        holds.append((max(h.start, now), 2, h.pool.ordinal, str(i), h))
    heapify(holds)
    overlay, demand = ctx.cycle.overlay, ctx.demand
    replays: dict[int, _PoolReplay] = {}

    def replay_of(ordinal: int) -> _PoolReplay:
        """The pool's replay, made when its first event comes: most pools are never reached."""
        replay = replays.get(ordinal)
        if replay is None:
            replay = replays[ordinal] = _PoolReplay(overlay.capacity(by_ordinal[ordinal]), demand)
        return replay

    all_held = list(held)
    while fronts or holds:
        at = fronts[0][0] if fronts else holds[0][0]
        if holds and holds[0][0] < at:
            at = holds[0][0]
        freed: set[int] = set()
        while fronts and fronts[0][0] == at:
            _, ordinal, i = fronts[0]
            replay = replay_of(ordinal)
            pool_ends = ends[ordinal]
            n = len(pool_ends)
            while i < n and pool_ends[i][0] == at:
                replay.give_back(pool_ends[i][2])
                i += 1
            freed.add(ordinal)
            if i < n:
                heapreplace(fronts, (pool_ends[i][0], ordinal, i))
            else:
                heappop(fronts)
        while holds and holds[0][0] == at:
            _, kind, ordinal, tie, payload = heappop(holds)
            replay = replay_of(ordinal)
            if kind == 2:  # an earlier head starts: its pods are taken until its expected end
                pods = choose_nodes(replay.capacity(), payload.demand)
                if pods is not None:
                    replay.take(pods)
                    if payload.end is not None:
                        heappush(holds, (max(payload.end, at), 1, ordinal, tie, pods))
            else:
                replay.give_back(payload)
                freed.add(ordinal)
        for ordinal in sorted(freed):
            replay = replays[ordinal]
            if not replay.may_fit():
                continue
            capacity = replay.capacity()
            pods = choose_nodes(capacity, ctx.demand)
            if pods is None:
                continue
            replay.fitted = True
            pool, end = by_ordinal[ordinal], at + ctx.duration
            if all(h.allows(pool, pods, end, start=at) for h in all_held):
                for h in all_held:
                    h.commit(pool, pods, end, start=at)
                return HeadReservation(ctx.request.id, pool, at, ctx.demand, capacity, end)
    return None


_End = tuple[datetime, str, tuple[NodeAllocation, ...]]
"""(when work is expected to end, not before now; its reservation's id; its pods)."""


def _ends_in(ctx: RequestContext, pool: PoolView) -> list[_End]:
    """The ends of the work running in a pool, in order of time, then reservation id: found once per
    cycle and pool until work there changes (the first blocked requests of a cycle look at the same
    pools)."""
    cycle = ctx.cycle
    version = cycle.running.pool_version(pool.key)
    known = cycle.end_events.get(pool.key)
    if known is not None and known[0] == version:
        return known[1]
    events = _sorted_ends(ctx, pool.key)
    cycle.end_events[pool.key] = (version, events)
    return events


def _sorted_ends(ctx: RequestContext, key: PoolKey) -> list[_End]:
    """`_ends_in`, sorted once while the pool's work is the same from cycle to cycle (on a full fleet
    most pools' work is: sorting all of it every cycle cost a tenth of one): `_KeptEnds`, in
    `PlanMemory.pool_ends`."""
    cycle = ctx.cycle
    return kept_for(cycle.memory.pool_ends, key, cycle.running.work_in(key), MAX_POOLS, _KeptEnds).at(ctx.now)


class _KeptEnds:
    """A pool's work and its ends, sorted by expected end (then id). Work expected to end by now ends
    now: those ends are made again, in id order, once per clock reading."""

    __slots__ = ("_by_end", "_clock", "_ends", "_events")

    def __init__(self, work: tuple[Reservation, ...]) -> None:
        self._by_end: list[_End] = sorted([(r.expected_end, r.id, r.pods) for r in work])  # unique ids
        self._ends = [e[0] for e in self._by_end]
        self._clock: datetime | None = None
        self._events = self._by_end

    def at(self, now: datetime) -> list[_End]:
        if self._clock != now:
            by_end, due = self._by_end, bisect_right(self._ends, now)
            self._events = sorted([(now, i, pods) for _, i, pods in by_end[:due]]) + by_end[due:] if due else by_end
            self._clock = now
        return self._events


class _PoolReplay:
    """A pool's capacity as ends are replayed, worked out only when the request may fit.

    A one-pod request that fits no node of the pool can only come to fit on a node whose work
    ended: until then only the nodes that ends touch are followed. A gang of whole GPUs can only fit
    once its nodes hold as many pods by their free whole GPUs alone, a sum kept as ends touch nodes.
    Other gangs, and pools where the request fitted once (an earlier head refused it), are checked
    in full at every end. What ends at one instant is given back node by node at once, when the pool
    is next looked at (work granted together often ends together). The nodes followed are plain
    numbers changed in place, made into nodes only when the pool's capacity is asked for: a gang's
    replay passes an end or two per instant for hundreds of instants, and a new node at each was
    most of its cost.
    """

    __slots__ = ("_base", "_demand", "_ended", "_followed", "_slots", "_touched", "fitted")

    def __init__(self, capacity: PoolCapacity, demand: Demand) -> None:
        self._base = capacity
        self._demand = demand
        self._followed: dict[int, _Followed] = {}
        """Nodes that ends touched since the pool was last made, by position, each as it is now."""
        self._ended: dict[int, list[NodeAllocation]] = {}  # pods ended on a node, not yet given back
        self._touched: set[int] = set()  # nodes touched since `may_fit` last looked
        gang_of_gpus = demand.pods > 1 and demand.gpus > 0
        self._slots = _gpu_slots(capacity.nodes, demand.gpus) if gang_of_gpus else None
        """For a gang of whole GPUs: pods its nodes hold by free whole GPUs (CPU and memory only lower it)."""
        self.fitted = demand.pods > 1 or choose_nodes(capacity, demand) is not None

    def capacity(self) -> PoolCapacity:
        self._give_back_ended()
        if self._followed:  # the touched nodes, made as `NodeCapacity.give_back_all` would leave them
            nodes, made = self._base.nodes, {}
            for i, (free, cpu, mem, whole, cpu_top, mem_top) in self._followed.items():
                made[i] = NodeCapacity.counted(nodes[i].name, free, cpu, mem, whole, cpu_top, mem_top)
            self._base = self._base.with_nodes(made)
            self._followed = {}
        return self._base

    def take(self, pods: Iterable[NodeAllocation]) -> None:
        self._base = self.capacity().take(pods)
        if self._slots is not None:
            self._slots = _gpu_slots(self._base.nodes, self._demand.gpus)

    def give_back(self, pods: Iterable[NodeAllocation]) -> None:
        self._base.group_by_node(pods, self._ended)
        if self._slots is None and not self.fitted:  # only `may_fit`'s check of touched nodes reads them
            self._touched.update(self._ended)  # every node with pods to give back was touched

    def _give_back_ended(self) -> None:
        """Each node's ended pods back on it, as `NodeCapacity.give_back_all` gives them back."""
        if not self._ended:
            return
        followed, base, gpus = self._followed, self._base.nodes, self._demand.gpus
        for i, pods in self._ended.items():
            f = followed.get(i)
            if f is None:
                n = base[i]
                f = followed[i] = [list(n.gpu_milli_free), n.cpu_milli_free, n.memory_mib_free,
                                   n.whole_gpus_free, n.cpu_milli_allocatable, n.memory_mib_allocatable]  # fmt: skip
            free, cpu, mem, before, cpu_top, mem_top = f
            f[1], f[2], f[3] = give_back_in_place(free, cpu, mem, before, cpu_top, mem_top, pods)
            if self._slots is not None:
                self._slots += f[3] // gpus - before // gpus
        self._ended = {}

    def may_fit(self) -> bool:
        """Could the request fit now? For a gang of whole GPUs, only once its nodes hold enough pods by
        their GPUs; always for another pool checked in full; else only on a touched node."""
        if self._slots is not None:
            self._give_back_ended()
            return self._slots >= self._demand.pods
        if self.fitted:
            return True
        self._give_back_ended()
        touched, self._touched = self._touched, set()
        d, followed, base = self._demand, self._followed, self._base.nodes
        for i in touched:
            f = followed.get(i)
            if f is None:  # made into the pool since: up to date there
                if base[i].fits(d.gpus, d.gpu_milli, d.cpu_milli, d.memory_mib):
                    return True
            elif (
                f[3] >= d.gpus
                and f[1] >= d.cpu_milli
                and f[2] >= d.memory_mib
                and max(0, max(f[0], default=0)) >= d.gpu_milli  # the largest share, as `of` finds it
            ):
                return True
        return False


_Followed = list
"""A node a replay follows (`_PoolReplay`): [its GPUs' free shares (a list), free CPU milli, free
memory MiB, whole free GPUs (as `NodeCapacity.of` counts them: shares of a whole GPU or more),
allocatable CPU milli, allocatable memory MiB], in the order `give_back_in_place` takes them."""


def _gpu_slots(nodes: Iterable[NodeCapacity], gpus: int) -> int:
    """Pods of `gpus` whole GPUs each that the nodes hold by their free whole GPUs alone."""
    return sum([n.whole_gpus_free // gpus for n in nodes])
