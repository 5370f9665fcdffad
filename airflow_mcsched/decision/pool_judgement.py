"""Per-pool verdicts for one request, shared by the ranking and the full scan.

A pool's node choice, dynamic scores and upper bound are remembered per demand, pool and capacity
object (held in the entry, so its identity stays its own), so every request alike in demand shares
them, in a cycle and in later cycles on the same view: an untouched pool keeps the view's capacity
object, and placing what an earlier cycle placed reaches the same objects (plan_cache.py). Values
of per-cycle scores (which read the clock and the running work) are kept the same way, with the
stamp of what they read (pool_stamps.py): taken again where it holds, measured again where not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TypeVar, cast

from airflow_mcsched.decision.candidate_plan import CandidatePlan, plan_candidates, shared_plans
from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.filters.base import Filter, Scope
from airflow_mcsched.decision.node_choice import choose_nodes, why_no_node
from airflow_mcsched.decision.outcome import Rejection
from airflow_mcsched.decision.pool_stamps import ClockStamp, WorkStamp
from airflow_mcsched.decision.reason_tally import ReasonCounts, count_reasons
from airflow_mcsched.decision.reasons import Reason
from airflow_mcsched.decision.scores.base import Score
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import ClusterView, PoolView

_V = TypeVar("_V")

MAX_REMEMBERED = 16384
"""Verdicts remembered per demand before starting afresh (each holds its capacity object)."""

Verdict = tuple[tuple[NodeAllocation, ...] | Rejection, tuple[float, ...] | None]
"""(pods on chosen nodes, dynamic score values) or (rejection, None)."""

FitVerdict = tuple[NodeAllocation, ...] | Rejection
"""Whether a pool takes a demand: the nodes chosen, or why not (`_verdict`)."""

Entry = tuple[PoolCapacity, Verdict | None, float, "WorkStamp | ClockStamp | None", float | None]
"""A memo entry: (the capacity object judged, the verdict or None for a bound only, the weighted sum
of the dynamic values or their bound, and for a fit with per-cycle values the stamp it holds for and
the most its weighted sum can be in any cycle, else None and None)."""


@dataclass(slots=True)
class Feasible:
    """A pool that can take the request now, the nodes chosen in it, and its exact score.

    Not frozen: made for every candidate found, and a frozen dataclass is slower to make.
    """

    cluster: ClusterView
    pool: PoolView
    static_values: tuple[float, ...]
    capacity: PoolCapacity
    pods: tuple[NodeAllocation, ...]
    total: float
    dynamic_values: tuple[float, ...]
    stamp: WorkStamp | ClockStamp | None
    """What the per-cycle values hold for (`Entry`), None without any."""


@dataclass(slots=True)
class Setup:
    """What requests alike in signature and live filters share: plan, live filters by kind, memo,
    ranking key, and the candidates and texts made from its verdicts."""

    plan: CandidatePlan
    by_cluster: list[Filter]
    by_capacity: list[Filter]
    fit_filters: list[Filter]
    fit_key: tuple
    """The demand and its fit filters: all that a pool's fit verdict reads besides the pool's
    capacity (`verdicts`; requests that fit nowhere share their walks by it, candidates.py)."""
    memo: dict[tuple[int, int], Entry]
    verdicts: dict[tuple[int, int], tuple[PoolCapacity, FitVerdict]]
    """Each pool's fit verdict by fleet position and capacity object, with the object: the first fit
    filter's rejection or the nodes chosen. They read the demand and the capacity alone, so every
    setup of the demand shares them (`_verdict`), whatever its scores: a queue's requests of one shape
    differ in duration and weights, and judged the same pools each."""
    dynamic_key: tuple
    """Demand, and the dynamic scores with their weights and signatures: what a memo entry's weighted
    sums and verdict depend on besides the pool (setups alike in it share their memo)."""
    ranking_key: tuple
    """Rankings of the cycle, and where later ones start from, are found by it (pool_ranking.py)."""
    per_cycle_at: tuple[int, ...] = ()
    """Positions in the plan's dynamic scores of the `per_cycle` ones: their values are stamped
    (pool_stamps.py)."""
    scored: dict[tuple[int, int, bool], tuple] = field(default_factory=dict)
    """Scored candidates by fleet position, capacity object and figures or not, with the dynamic values
    (and stamp and per-cycle figures) they were made of (score_breakdown.py)."""
    static_parts: dict[tuple[int, bool], tuple] = field(default_factory=dict)
    """The static scores' parts by fleet position and figures or not (score_breakdown.py)."""
    static_texts: dict[int, str] = field(default_factory=dict)
    """The static parts' words in the admitted summary, by fleet position (admission.py)."""
    summaries: dict[tuple[int, ...], tuple] = field(default_factory=dict)
    """Admitted summaries by the identity of the candidates they name (admission.py)."""
    _lasting_counts: ReasonCounts | None = None

    def remembered(self) -> int:
        """Entries this setup alone keeps per capacity object (its memo is shared: `plan_cache.trim`)."""
        return len(self.scored) + len(self.summaries)

    def forget_per_capacity(self) -> None:
        """Drop what this setup alone keeps per capacity object: candidates and summaries (its
        verdicts and bounds are in its memo, which setups share: `plan_cache.trim` empties it)."""
        self.scored.clear()
        self.summaries.clear()

    def lasting_counts(self) -> ReasonCounts:
        """The plan's lasting rejections' reasons counted (reason_tally.py): the most of a waiting
        request's tally, worked out when the first request of the setup waits (most never do)."""
        if self._lasting_counts is None:
            self._lasting_counts = count_reasons(self.plan.rejections)
        return self._lasting_counts


@lru_cache(maxsize=16)  # filter sets are few and long-lived
def _live(filters: tuple[Filter, ...]) -> tuple[Filter, ...]:
    """The filters `setup_for` asks about each request (the others it never asks), found once per set."""
    return tuple(f for f in filters if not f.lasting)


def setup_for(ctx: RequestContext, filters: Sequence[Filter], scores: Sequence[Score]) -> Setup:
    """Requests alike in signature and in which live filters apply to them share one setup, in this
    cycle and in later ones on the view."""
    live = tuple([f for f in _live(tuple(filters)) if f.applies(ctx)])  # a list first: no generator per request
    key = (ctx.signature, live)
    shared = shared_plans(ctx, filters)
    setup = shared.setups.get(key)
    if setup is None:
        setup = shared.from_older("setups", key)
        if setup is None:
            setup = shared.setups[key] = _new_setup(ctx, filters, scores, live)
    return setup


def _new_setup(ctx: RequestContext, filters: Sequence[Filter], scores: Sequence[Score], live: tuple) -> Setup:
    plan = plan_candidates(ctx, filters, scores)
    dynamic = plan.dynamic_scores
    # the weights are in the keys: a memo entry holds weighted sums as well as the verdict
    dynamic_key = (ctx.demand, tuple((s, w, s.signature(ctx)) for s, w in dynamic))
    fit_filters = [f for f in live if f.fit]
    fit_key = (ctx.demand, tuple(fit_filters))
    return Setup(
        plan=plan,
        by_cluster=[f for f in live if f.scope is Scope.CLUSTER],
        by_capacity=[f for f in live if f.scope is not Scope.CLUSTER and not f.fit],
        fit_filters=fit_filters,
        fit_key=fit_key,
        memo=ctx.cycle.memory.fit_memo_for(dynamic_key),
        verdicts=ctx.cycle.memory.fit_memo_for(("verdicts", fit_key)),
        dynamic_key=dynamic_key,
        ranking_key=(id(plan), dynamic_key),
        per_cycle_at=tuple(i for i, (s, _) in enumerate(dynamic) if s.per_cycle),
    )


def _judged(ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity) -> Entry:
    """The memo entry of a pool not judged on this capacity before: the fit verdict's rejection
    (`_verdict`), or the nodes chosen, the dynamic score values and their weighted sum (with
    per-cycle values, their stamp and their bound in any cycle)."""
    pods = _verdict(ctx, setup, cluster, pool, capacity)
    if isinstance(pods, Rejection):
        return (capacity, (pods, None), 0.0, None, None)
    dynamic = setup.plan.dynamic_scores
    values = tuple([s.measure(ctx, cluster, pool, capacity, pods) for s, _ in dynamic])
    if not setup.per_cycle_at:
        return (capacity, (pods, values), weighted(values, dynamic), None, None)
    stamp = _stamp(ctx, setup, cluster, pool, capacity, pods, ctx.cycle.stamps(pool))
    # The bound in any cycle: the values that read no cycle hold in every cycle (the nodes are
    # chosen without one), and only the per-cycle ones move, up to their bounds. Summed in the same
    # order, the total of any cycle cannot exceed it (a float sum of terms each no larger is no larger).
    most = list(values)
    for i in setup.per_cycle_at:
        most[i] = dynamic[i][0].upper_bound(ctx, cluster, pool, capacity)
    return (capacity, (pods, values), weighted(values, dynamic), stamp, weighted(most, dynamic))


def _verdict(
    ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity
) -> FitVerdict:
    """The first fit filter's rejection, or the node chooser's answer (its rejection when no node
    fits), kept with every setup of the demand (`Setup.verdicts`)."""
    known = _kept_verdict(setup, pool, capacity)
    if known is not None:
        return known
    verdict = _fit_filters_rejection(ctx, setup, cluster, pool, capacity) or choose_nodes(capacity, ctx.demand)
    if verdict is None:
        reason, message = why_no_node(capacity, ctx.demand)
        verdict = Rejection(cluster.name, pool.name, reason, message)
    _remember(setup.verdicts, (pool.ordinal, id(capacity)), (capacity, verdict))
    return verdict


def _fit_filters_rejection(
    ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity
) -> Rejection | None:
    for f in setup.fit_filters:
        message = f.check(ctx, cluster, pool, capacity)
        if message is not None:
            return Rejection(cluster.name, pool.name, f.reason, message)
    return None


def _kept_verdict(setup: Setup, pool: PoolView, capacity: PoolCapacity) -> FitVerdict | None:
    """The pool's fit verdict on this capacity when a setup of the demand judged it already."""
    known = setup.verdicts.get((pool.ordinal, id(capacity)))
    return known[1] if known is not None and known[0] is capacity else None


def _stamp(
    ctx: RequestContext,
    setup: Setup,
    cluster: ClusterView,
    pool: PoolView,
    capacity: PoolCapacity,
    pods: tuple[NodeAllocation, ...],
    stamps: tuple[WorkStamp, ClockStamp],
) -> WorkStamp | ClockStamp:
    """What per-cycle values on these nodes hold for: the pool's running work, whatever the clock,
    when every per-cycle score reads neither there (`Score.cycle_free`); else that work at this
    clock reading."""
    dynamic = setup.plan.dynamic_scores
    for i in setup.per_cycle_at:
        if not dynamic[i][0].cycle_free(ctx, cluster, pool, capacity, pods):
            return stamps[1]
    return stamps[0]


def _restamped(
    ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity, known: Entry
) -> Entry:
    """A fit entry whose stamp is not this cycle's (`known`) made this cycle's: its nodes and the
    values of the scores that are not per-cycle hold in any cycle; the per-cycle values are measured
    again, unless they read nothing of either cycle (then they are the same)."""
    stamps = ctx.cycle.stamps(pool)
    verdict = known[1]
    assert verdict is not None and verdict[1] is not None, "only fits are stamped"
    pods, values = cast(tuple[NodeAllocation, ...], verdict[0]), verdict[1]
    stamp = _stamp(ctx, setup, cluster, pool, capacity, pods, stamps)
    entry: Entry
    if stamp is stamps[0] and type(known[3]) is WorkStamp:  # free of the cycle then and now
        entry = (capacity, verdict, known[2], stamp, known[4])
    else:
        dynamic = setup.plan.dynamic_scores
        now = list(values)
        for i in setup.per_cycle_at:
            now[i] = dynamic[i][0].measure(ctx, cluster, pool, capacity, pods)
        values = tuple(now)
        entry = (capacity, (pods, values), weighted(values, dynamic), stamp, known[4])
    _remember(setup.memo, (pool.ordinal, id(capacity)), entry)
    return entry


def _remember(memo: dict[tuple[int, int], _V], key: tuple[int, int], entry: _V) -> None:
    if len(memo) >= MAX_REMEMBERED:
        memo.clear()
    memo[key] = entry


def exact(ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity) -> Entry:
    """The pool's verdict in this cycle: its memo entry (`Entry`), made now unless one made on this
    capacity holds."""
    key = (pool.ordinal, id(capacity))
    known = setup.memo.get(key)
    if known is not None and known[0] is capacity and known[1] is not None:  # not a bound only
        stamp = known[3]
        if stamp is None or holds(ctx, pool, stamp):
            return known
        return _restamped(ctx, setup, cluster, pool, capacity, known)
    entry = _judged(ctx, setup, cluster, pool, capacity)
    _remember(setup.memo, key, entry)
    return entry


def holds(ctx: RequestContext, pool: PoolView, stamp: WorkStamp | ClockStamp) -> bool:
    """Per-cycle values stamped `stamp` hold in this cycle: it is one of the pool's stamps now."""
    stamps = ctx.cycle.stamps(pool)
    return stamp is stamps[0] or stamp is stamps[1]


def optimistic(
    ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity
) -> float:
    """Weighted sum of the dynamic scores' upper bounds (exact values when already known); -1 when
    the pool is known not to fit the request."""
    known = setup.memo.get((pool.ordinal, id(capacity)))
    if known is not None and known[0] is capacity:
        verdict = known[1]
        if verdict is None:  # a bound
            return known[2]
        if verdict[1] is None:
            return -1.0
        stamp = known[3]
        if stamp is not None:  # `holds`, inline: asked for every pool a ranking takes or puts back
            stamps = ctx.cycle.pool_stamps.get(pool.ordinal) or ctx.cycle.stamps(pool)
            if stamp is not stamps[0] and stamp is not stamps[1]:  # another cycle's: one measure makes it this one's
                return _restamped(ctx, setup, cluster, pool, capacity, known)[2]
        return known[2]
    rejection = _kept_verdict(setup, pool, capacity)
    if isinstance(rejection, Rejection):  # judged for another setup of the demand: no bound to work out
        _remember(setup.memo, (pool.ordinal, id(capacity)), (capacity, (rejection, None), 0.0, None, None))
        return -1.0
    return _bound(ctx, setup, cluster, pool, capacity)


def bound_in_any_cycle(
    ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity
) -> float:
    """`optimistic` for a setup with per-cycle scores, but never a total that holds in one cycle only:
    what a later cycle's ranking starts from."""
    known = setup.memo.get((pool.ordinal, id(capacity)))
    if known is None or known[0] is not capacity:
        return _bound(ctx, setup, cluster, pool, capacity)
    if known[1] is None:
        return known[2]
    if known[1][1] is None:
        return -1.0
    return known[4]  # type: ignore[return-value]  # a fit of a setup with per-cycle scores: stamped, with its bound


def _bound(ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity) -> float:
    """The weighted sum of the dynamic scores' upper bounds, which read no cycle (scores/base.py),
    remembered until the pool is judged on this capacity."""
    dynamic = setup.plan.dynamic_scores
    bound = weighted([s.upper_bound(ctx, cluster, pool, capacity) for s, _ in dynamic], dynamic)
    _remember(setup.memo, (pool.ordinal, id(capacity)), (capacity, None, bound, None, None))
    return bound


def weighted(values: Sequence[float], scores: Sequence[tuple[Score, float]]) -> float:
    """Weighted sum, always summed in the same order so equal inputs give bit-equal totals (ties)."""
    total = 0.0
    for v, (_, w) in zip(values, scores, strict=True):
        total += v * w
    return total


def live_rejection(
    ctx: RequestContext,
    setup: Setup,
    cluster: ClusterView,
    pool: PoolView,
    capacity: PoolCapacity,
    pods: tuple[NodeAllocation, ...] | None,
) -> tuple[int, Rejection] | None:
    """This request's own checks on a pool (spread group, quota, GPUs kept for others; with `pods`,
    the backfill head): what depends on the team, the priority or the cycle's grants."""
    for f in setup.by_cluster:
        message = f.check(ctx, cluster, None, None)
        if message is not None:
            return cluster.pools[0].ordinal, Rejection(cluster.name, None, f.reason, message)
    for f in setup.by_capacity:
        message = f.check(ctx, cluster, pool, capacity)
        if message is not None:
            return pool.ordinal, Rejection(cluster.name, pool.name, f.reason, message)
    head = ctx.cycle.head
    if pods is not None and head is not None and not head.allows(pool, pods, ctx.expected_end):
        return pool.ordinal, Rejection(cluster.name, pool.name, Reason.WAITING_BEHIND_HEAD, head.explain())
    return None
