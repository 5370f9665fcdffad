"""Best-first order of a plan's pools for one demand, kept up to date across the requests of a cycle.

Each eligible pool is held at its most optimistic known total: first its static score plus the
dynamic scores' maximum, then plus their upper bounds on its capacity, then its exact total.
Taking the best refines the top until the `want` best are exact, feasible and accepted by the
request's own checks; every other pool is provably no better. When a pool's capacity changes (a
grant, an eviction), it re-enters at its optimistic value on the new capacity, so the order is
never stale.

The order is two parts: the entries a ranking starts with, sorted once and shared by every ranking
that starts there (read from a cursor, never copied), and a small heap of the entries put back
since. The next entry is the better of the two fronts. Most rankings are used once in a cycle and
take a handful of entries, so starting one costs no copy of a few hundred entries.
"""

from __future__ import annotations

from collections.abc import Iterable
from heapq import heappop, heappush

from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.outcome import Rejection
from airflow_mcsched.decision.plan_cache import SharedPlans
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


_Entry = tuple[float, int, int]
"""(minus the optimistic total, fleet position, version): entries never tie, the position differs."""

_State = tuple[tuple[_Entry, ...], dict[int, int], dict[int, int], dict[int, PoolCapacity]]
"""A ranking's start order (sorted), versions, levels and the capacity each judged pool was judged
on. Versions and levels name only the pools that left their start (version 0, `_FRESH`): a ranking
starts with a copy of each, and most of a plan's pools are never judged."""


class RankingStart:
    """Where later rankings of one plan and demand start from: the pools a ranking had judged by the
    end of its first use, each with the capacity object it was judged on, and those it ruled out.

    Kept with the view's shared plans (`remember_start`). The ranking state it stands for is worked
    out on the first reuse, not when the start is kept (a first cycle on a fleet reuses few of its
    starts, and a start most of whose pools changed capacity since is not used at all), and then
    kept: each refined pool at its bound in any cycle for a setup with per-cycle scores, at its
    optimistic value (an exact total when one is known) for another. Neither reads the cycle, so
    both hold in any later cycle on a pool whose capacity is still the object judged.
    """

    __slots__ = ("_ruled_out", "_state", "capacity_state", "judged_on")

    def __init__(self, judged_on: dict[int, PoolCapacity], ruled_out: set[int], capacity_state: object) -> None:
        self.judged_on = judged_on
        """The judged pools' fleet positions, each with the capacity object it was judged on."""
        self._ruled_out = ruled_out
        self._state: _State | None = None
        self.capacity_state = capacity_state
        """The cycle's capacity objects when the pools were judged (`CycleState.capacity_state`): a
        ranking that starts at the same has no pool whose capacity changed since."""

    def state(self, ctx: RequestContext, setup: Setup) -> _State:
        if self._state is None:
            plan = setup.plan
            static = plan.by_ordinal
            value = bound_in_any_cycle if setup.per_cycle_at else optimistic
            level: dict[int, int] = {}
            judged_on, ruled_out = self.judged_on, self._ruled_out
            refined = []
            for ordinal, capacity in judged_on.items():
                _, _, cluster, pool, _ = static[ordinal]
                v = -1.0 if ordinal in ruled_out else value(ctx, setup, cluster, pool, capacity)
                if v < 0:  # ruled out, or known since not to fit: out until its capacity changes
                    level[ordinal] = _INFEASIBLE
                else:
                    level[ordinal] = _BOUNDED
                    refined.append((static[ordinal][0] - v, ordinal, 0))
            order = [e for e in plan.start_order if e[1] not in judged_on]
            order += refined
            order.sort()
            self._state = (tuple(order), {}, level, judged_on)
        return self._state


class PoolRanking:
    """One plan's pools for one demand, best first, for the requests of one cycle.

    The pools it judged by the end of its first use are kept with the plan (`RankingStart`): a
    later cycle on the same view starts from them, and pools whose capacity object differs by then
    are judged again on what they have now (`_refresh`).
    """

    __slots__ = (
        "_at",
        "_heap",
        "_judged_on",
        "_level",
        "_order",
        "_plan",
        "_static",
        "_synced",
        "_version",
        "leaves_start",
    )

    def __init__(self, ctx: RequestContext, setup: Setup, overlay: CapacityOverlay, start: RankingStart | None) -> None:
        plan = setup.plan
        self._plan = plan  # held: rankings are found by the plan's identity
        self._static = plan.by_ordinal
        self._synced = len(overlay.log)
        self._heap: list[_Entry] = []  # entries put back since the start, a heap
        self._at = 0  # the start order's next entry
        # its state after its first use becomes the start of later rankings when there was none, or
        # when most pools of the one it had changed capacity since (that one is then out of date)
        self.leaves_start = start is None or not self._resume(ctx, setup, overlay, start)
        if self.leaves_start:
            self._order = plan.start_order
            self._version: dict[int, int] = {}
            self._level: dict[int, int] = {}
            self._judged_on: dict[int, PoolCapacity] = {}

    def _resume(self, ctx: RequestContext, setup: Setup, overlay: CapacityOverlay, start: RankingStart) -> bool:
        """Start from `start`, and return True; pools whose capacity object differs by now go back in
        as `_refresh` puts them. When most do (a new capacity read), return False: starting
        afresh then costs less than putting each back, and the start is out of date."""
        judged = start.judged_on
        stale = [] if start.capacity_state is ctx.cycle.capacity_state else self._stale(overlay, judged.items())
        if 2 * len(stale) > len(judged):
            return False
        order, version, level, judged_on = start.state(ctx, setup)
        self._order, self._version, self._level = order, dict(version), dict(level)
        self._judged_on = dict(judged_on)
        self._refresh(ctx, setup, stale)
        return True

    def _stale(
        self, overlay: CapacityOverlay, judged: Iterable[tuple[int, PoolCapacity]]
    ) -> list[tuple[int, PoolCapacity]]:
        """Of these judged pools, each with the capacity object it was judged on, those whose
        capacity is another object now, each with that object.

        A pool still at its most optimistic value is never stale: that value does not read capacity.
        """
        changed, static = overlay.by_ordinal, self._static
        return [(o, c) for o, j in judged if (c := changed.get(o) or overlay.capacity(static[o][3])) is not j]

    def _refresh(self, ctx: RequestContext, setup: Setup, stale: list[tuple[int, PoolCapacity]]) -> None:
        """These pools (`_stale`'s) go back in at their optimistic value on the capacity they have now
        (in any order: entries never tie), or out when that is known not to fit.

        Worked out here, not left at the plan's most optimistic value for a pop to refine: a pool
        whose capacity a grant changed was judged because it ranked near the top, so it is mostly
        popped again, and refining it on the way in saves that pop and the push after it.
        """
        static, heap = self._static, self._heap
        level, version, judged_on = self._level, self._version, self._judged_on
        for ordinal, capacity in stale:
            _, _, cluster, pool, _ = entry = static[ordinal]
            judged_on[ordinal] = capacity
            v = version[ordinal] = version.get(ordinal, 0) + 1
            bound = optimistic(ctx, setup, cluster, pool, capacity)
            if bound < 0:  # known not to fit: out until its capacity changes
                level[ordinal] = _INFEASIBLE
            else:
                level[ordinal] = _BOUNDED
                heappush(heap, (entry[0] - bound, ordinal, v))

    def start(self, capacity_state: object) -> RankingStart:
        """Where a ranking of the same plan and demand in a later cycle starts from: the pools judged
        so far, on the cycle's capacity objects that `capacity_state` stands for."""
        level = self._level
        ruled_out = {o for o, at in level.items() if at == _INFEASIBLE}
        return RankingStart(dict(self._judged_on), ruled_out, capacity_state)

    def _sync(self, ctx: RequestContext, setup: Setup, overlay: CapacityOverlay) -> None:
        """Refined pools whose capacity changed since the last use go back in (`_refresh`): of those
        the log names, or of every judged pool when it names more, those whose capacity object
        differs."""
        log, since = overlay.log, self._synced
        if since == len(log):
            return
        self._synced = len(log)
        judged_on = self._judged_on
        judged: Iterable[tuple[int, PoolCapacity]] = judged_on.items()
        if len(log) - since < len(judged_on):  # fewer named than judged: those named, if judged
            judged = [(o, j) for o in set(log[since:]) if (j := judged_on.get(o)) is not None]
        self._refresh(ctx, setup, self._stale(overlay, judged))

    def best(self, ctx: RequestContext, setup: Setup, want: int) -> list[Feasible]:
        overlay = ctx.cycle.overlay
        changed = overlay.by_ordinal
        self._sync(ctx, setup, overlay)
        heap, level, version, judged_on = self._heap, self._level, self._version, self._judged_on
        static, memo, cycle = self._static, setup.memo, ctx.cycle
        pool_stamps = cycle.pool_stamps
        # the request's own checks (`live_rejection`): with no live filter, only the backfill heads'
        live_filters = setup.by_cluster or setup.by_capacity
        head, end_at = cycle.head, ctx.expected_end
        found: list[Feasible] = []
        put_back = []
        order, at = self._order, self._at
        end = len(order)
        while len(found) < want:
            # the better of the two fronts: the start order's next entry, the heap's top
            if heap and (at == end or heap[0] < order[at]):
                entry = heappop(heap)
            elif at < end:
                entry = order[at]
                at += 1
            else:
                break
            _, ordinal, entry_version = entry
            if entry_version != version.get(ordinal, 0):
                continue  # superseded by a newer entry for the same pool
            neg_static, _, cluster, pool, static_values = static[ordinal]
            capacity = changed.get(ordinal) or overlay.capacity(pool)
            state = level.get(ordinal, _FRESH)
            judged_on[ordinal] = capacity
            # Refine in place while the entry stays on top; push it back as soon as it does not.
            if state == _FRESH:
                bound = optimistic(ctx, setup, cluster, pool, capacity)
                if bound < 0:  # known not to fit: out until its capacity changes
                    level[ordinal] = _INFEASIBLE
                    continue
                level[ordinal] = state = _BOUNDED
                entry = (neg_static - bound, ordinal, entry_version)
                if (heap and entry > heap[0]) or (at < end and entry > order[at]):
                    heappush(heap, entry)
                    continue
            known = memo.get((ordinal, id(capacity)))  # `exact`'s memo, read here: most pops find it
            if known is None or known[0] is not capacity or known[1] is None:
                known = exact(ctx, setup, cluster, pool, capacity)
            elif known[3] is not None:  # per-cycle values: `holds`, inline (the cycle's stamps of the pool)
                stamps = pool_stamps.get(ordinal) or cycle.stamps(pool)
                if known[3] is not stamps[0] and known[3] is not stamps[1]:
                    known = exact(ctx, setup, cluster, pool, capacity)
            pods, values = known[1]  # type: ignore[misc]  # exact's: a verdict
            dynamic_total = known[2]
            if isinstance(pods, Rejection):
                level[ordinal] = _INFEASIBLE  # out until its capacity changes
                continue
            total = -(neg_static - dynamic_total)
            if state == _BOUNDED:
                level[ordinal] = _EXACT
                entry = (-total, ordinal, entry_version)
                if (heap and entry > heap[0]) or (at < end and entry > order[at]):
                    heappush(heap, entry)
                    continue
            put_back.append(entry)
            if (
                live_rejection(ctx, setup, cluster, pool, capacity, pods) is None
                if live_filters
                else head is None or head.allows(pool, pods, end_at)
            ):
                # a fit's verdict carries its values (only a rejection's is None)
                found.append(Feasible(cluster, pool, static_values, capacity, pods, total, values, known[3]))  # type: ignore[arg-type]
        self._at = at
        for entry in put_back:
            heappush(heap, entry)
        return found


def ranking_for(ctx: RequestContext, setup: Setup) -> PoolRanking:
    rankings, key = ctx.cycle.rankings, setup.ranking_key
    ranking = rankings.get(key)
    if ranking is None:
        shared = _shared(ctx)
        start = shared.ranking_starts.get(key) or shared.from_older("ranking_starts", key)
        ranking = rankings[key] = PoolRanking(ctx, setup, ctx.cycle.overlay, start)
    return ranking


def remember_start(ctx: RequestContext, setup: Setup, ranking: PoolRanking) -> None:
    """After a ranking's first use: later rankings of its plan and demand, in later cycles on the
    view, start from where it is, when it had no start or an out-of-date one."""
    if not ranking.leaves_start:
        return
    ranking.leaves_start = False
    _shared(ctx).ranking_starts[setup.ranking_key] = ranking.start(ctx.cycle.capacity_state)


def _shared(ctx: RequestContext) -> SharedPlans:
    shared = ctx.cycle.shared
    assert shared is not None, "a ranking's setup found the cycle's shared plans first"
    return shared
