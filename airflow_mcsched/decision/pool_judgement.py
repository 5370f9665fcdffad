"""Per-pool verdicts for one request, shared by the ranking and the full scan.

A pool's node choice, dynamic scores and upper bound are remembered per demand, pool and capacity
object (held in the entry, so its identity stays its own), so every request alike in demand shares
them, in a cycle and in later cycles on the same view: an untouched pool keeps the view's capacity
object, and placing what an earlier cycle placed reaches the same objects (plan_cache.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from airflow_mcsched.decision.candidate_plan import CandidatePlan, plan_candidates, shared_plans
from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.filters.base import Filter, Scope
from airflow_mcsched.decision.node_choice import choose_nodes, why_no_node
from airflow_mcsched.decision.outcome import Rejection
from airflow_mcsched.decision.plan_cache import MAX_PLANS
from airflow_mcsched.decision.reasons import Reason
from airflow_mcsched.decision.scores.base import Score
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import ClusterView, PoolView

MAX_REMEMBERED = 16384
"""Verdicts remembered per demand before starting afresh (each holds its capacity object)."""

Verdict = tuple[tuple[NodeAllocation, ...] | Rejection, tuple[float, ...] | None]
"""(pods on chosen nodes, dynamic score values) or (rejection, None)."""


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


@dataclass(slots=True)
class Setup:
    """What requests alike in signature and live filters share: plan, live filters by kind, memo, ranking."""

    plan: CandidatePlan
    by_cluster: list[Filter]
    by_capacity: list[Filter]
    fit_filters: list[Filter]
    memo: dict[tuple[int, int], tuple]
    dynamic_key: tuple
    """Demand, and the dynamic scores with their weights and signatures: what a memo entry's weighted
    sums and verdict depend on besides the pool (a cycle's own setups alike in it share their memo)."""
    ranking_key: tuple
    start_key: tuple | None
    """Where later rankings of the same plan and demand start from (pool_ranking.py): the ranking's
    own key, or, for a cycle's own setup, its template's (the bounds it starts from hold in any
    cycle); None when a per-cycle score's bound may read the cycle (they then rank afresh)."""
    per_cycle_at: tuple[int, ...] = ()
    """Positions in the plan's dynamic scores of the `per_cycle` ones: a setup with any is its cycle's own."""
    lasting_memo: dict[tuple[int, int], tuple] | None = None
    """With per-cycle scores: node choice, the other dynamic values and their bounds by pool and
    capacity object, shared with later cycles (what per-cycle scores do not touch is not redone)."""
    fixed_per_cycle_bounds: bool = False
    """Every per-cycle score keeps the default upper bound (`Score.upper_bound`, which reads neither
    the pool nor the cycle): the whole bound is then worked out once with the lasting ones and kept
    with them."""
    scored: dict[tuple[int, int, bool], tuple] = field(default_factory=dict)
    """Scored candidates by fleet position, capacity object and figures or not, with the dynamic values
    (and per-cycle figures) they were made of (score_breakdown.py); a cycle's own setups share their
    template's."""
    static_parts: dict[tuple[int, bool], tuple] = field(default_factory=dict)
    """The static scores' parts by fleet position and figures or not (score_breakdown.py)."""
    static_texts: dict[int, str] = field(default_factory=dict)
    """The static parts' words in the admitted summary, by fleet position (admission.py)."""
    summaries: dict[tuple[int, ...], tuple] = field(default_factory=dict)
    """Admitted summaries by the identity of the candidates they name (admission.py)."""
    free_memo: dict[tuple[int, int], tuple] | None = None
    """With per-cycle scores: whole verdicts by pool and capacity object, as `memo` holds them, where
    every per-cycle score was `cycle_free`; shared by a template's setups across cycles, and taken
    in a cycle where that still holds."""


@lru_cache(maxsize=16)  # plugin sets are few and long-lived
def _live_and_per_cycle(filters: tuple[Filter, ...], scores: tuple[Score, ...]) -> tuple[tuple, tuple]:
    """The plugins `setup_for` asks about each request (the others it never asks), found once per set."""
    return tuple(f for f in filters if not f.lasting), tuple(s for s in scores if s.per_cycle)


def setup_for(ctx: RequestContext, filters: Sequence[Filter], scores: Sequence[Score]) -> Setup:
    """Requests alike in signature and in which live filters apply to them share one setup."""
    live_filters, per_cycle_scores = _live_and_per_cycle(tuple(filters), tuple(scores))
    live = tuple([f for f in live_filters if f.applies(ctx)])  # a list first: no generator per request
    # a per-cycle score that counts for this request makes its setup (the verdicts with its values,
    # rankings, scored candidates) its cycle's own, kept with the cycle; one weighed 0 changes nothing
    weights = ctx.weights
    per_cycle = [s for s in per_cycle_scores if getattr(weights, s.name, 1.0) > 0 and s.applies(ctx)]
    key = (ctx.signature, live, *[s.signature(ctx) for s in per_cycle])
    shared = shared_plans(ctx, filters)
    setups = ctx.cycle.setups if per_cycle else shared.setups
    setup = setups.get(key)
    if setup is not None:
        return setup
    if not per_cycle:
        setup = setups[key] = _new_setup(ctx, filters, scores, live)
        return setup
    # What does not change between cycles (the plan, the live filters, the memo of lasting values)
    # is kept with the view as a template, found without the per-cycle scores' signatures (which
    # name the cycle); the cycle's own setup starts from it, with the memo of its per-cycle values.
    templates = shared.templates
    template_key = (key[0], live, tuple(per_cycle))
    template = templates.get(template_key)
    if template is None:
        if len(templates) >= MAX_PLANS:
            templates.clear()
        template = templates[template_key] = _new_setup(ctx, filters, scores, live)
    setup = setups[key] = Setup(
        plan=template.plan,
        by_cluster=template.by_cluster,
        by_capacity=template.by_capacity,
        fit_filters=template.fit_filters,
        # shared by the cycle's setups alike in demand, dynamic scores, weights and per-cycle signatures
        memo=_cycle_fit_memo(ctx, (template.dynamic_key, key[2:])),
        dynamic_key=template.dynamic_key,
        ranking_key=(template.ranking_key, key[2:]),
        start_key=template.start_key,
        per_cycle_at=template.per_cycle_at,
        lasting_memo=template.lasting_memo,
        fixed_per_cycle_bounds=template.fixed_per_cycle_bounds,
        static_parts=template.static_parts,  # they read no per-cycle score
        static_texts=template.static_texts,
        scored=template.scored,  # checked against the per-cycle values (score_breakdown.py)
        summaries=template.summaries,  # by the candidates they name, so as those are
        free_memo=template.free_memo,
    )
    return setup


def _cycle_fit_memo(ctx: RequestContext, key: tuple) -> dict[tuple[int, int], tuple]:
    """The verdicts the cycle's own setups alike in `key` share (`setdefault` would make a dict each time)."""
    memos = ctx.cycle.fit_memos
    memo = memos.get(key)
    if memo is None:
        memo = memos[key] = {}
    return memo


def _new_setup(ctx: RequestContext, filters: Sequence[Filter], scores: Sequence[Score], live: tuple) -> Setup:
    plan = plan_candidates(ctx, filters, scores)
    dynamic = plan.dynamic_scores
    # the weights are in the keys: a memo entry holds weighted sums as well as the verdict
    dynamic_key = (ctx.demand, tuple((s, w, s.signature(ctx)) for s, w in dynamic))
    memory = ctx.cycle.memory
    per_cycle_at = tuple(i for i, (s, _) in enumerate(dynamic) if s.per_cycle)
    lasting_memo = None
    per_cycle = [(s, w) for s, w in dynamic if s.per_cycle]
    if per_cycle:
        lasting = tuple((s, w, s.signature(ctx)) for s, w in dynamic if not s.per_cycle)
        # the per-cycle weights too: the whole bound kept with the lasting ones is weighted by them
        lasting_memo = memory.fit_memo_for(("without per-cycle scores", ctx.demand, lasting, tuple(per_cycle)))
    fixed = all(type(s).upper_bound is Score.upper_bound for s, _ in per_cycle)
    ranking_key = (id(plan), dynamic_key)
    return Setup(
        plan=plan,
        by_cluster=[f for f in live if f.scope is Scope.CLUSTER],
        by_capacity=[f for f in live if f.scope is not Scope.CLUSTER and not f.fit],
        fit_filters=[f for f in live if f.fit],
        memo={} if per_cycle_at else memory.fit_memo_for(dynamic_key),
        dynamic_key=dynamic_key,
        ranking_key=ranking_key,
        start_key=ranking_key if fixed else None,
        per_cycle_at=per_cycle_at,
        lasting_memo=lasting_memo,
        fixed_per_cycle_bounds=fixed,
        free_memo={} if per_cycle_at else None,
    )


def _merged(setup: Setup, lasting: tuple[float, ...], per_cycle: list[float]) -> tuple[float, ...]:
    """Lasting and per-cycle values back in the plan's order of dynamic scores."""
    at = setup.per_cycle_at
    if at[0] == len(lasting):  # the per-cycle scores come last (as in the default scores)
        return lasting + tuple(per_cycle)
    out = list(lasting)
    for position, value in zip(at, per_cycle, strict=True):
        out.insert(position, value)
    return tuple(out)


def _lasting(setup: Setup, pool: PoolView, capacity: PoolCapacity) -> tuple:
    """(capacity, fit verdict without per-cycle values or None, bounds or None), from the memo shared
    across cycles; (capacity, None, None) when nothing is known yet. Bounds are (the lasting scores'
    upper bounds, their weighted sum or None, the whole bound with the per-cycle scores' or None)."""
    memo = setup.lasting_memo
    assert memo is not None, "asked only of setups with per-cycle scores"
    known = memo.get((pool.ordinal, id(capacity)))
    if known is None or known[0] is not capacity:
        return (capacity, None, None)
    return known


def _fit(ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity) -> Verdict:
    """The first fit filter's rejection, or the node chooser's answer and the dynamic score values."""
    if setup.lasting_memo is None:
        return _fit_with(ctx, setup, cluster, pool, capacity, per_cycle=True)
    known = _lasting(setup, pool, capacity)
    if known[1] is None:
        known = (capacity, _fit_with(ctx, setup, cluster, pool, capacity, per_cycle=False), known[2])
        _remember(setup.lasting_memo, (pool.ordinal, id(capacity)), known)
    pods, values = known[1]
    if values is None:
        return pods, None
    dynamic = setup.plan.dynamic_scores
    now = [dynamic[i][0].measure(ctx, cluster, pool, capacity, pods) for i in setup.per_cycle_at]
    return pods, _merged(setup, values, now)


def _fit_with(
    ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity, *, per_cycle: bool
) -> Verdict:
    """`_fit` worked out, with the per-cycle scores' values or without them."""
    for f in setup.fit_filters:
        message = f.check(ctx, cluster, pool, capacity)
        if message is not None:
            return Rejection(cluster.name, pool.name, f.reason, message), None
    pods = choose_nodes(capacity, ctx.demand)
    if pods is None:
        reason, message = why_no_node(capacity, ctx.demand)
        return Rejection(cluster.name, pool.name, reason, message), None
    scores = setup.plan.dynamic_scores
    return pods, tuple(s.measure(ctx, cluster, pool, capacity, pods) for s, _ in scores if per_cycle or not s.per_cycle)


def _remember(memo: dict[tuple[int, int], tuple], key: tuple[int, int], entry: tuple) -> None:
    if len(memo) >= MAX_REMEMBERED:
        memo.clear()
    memo[key] = entry


def exact(
    ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity
) -> tuple[Verdict, float]:
    """The pool's verdict, and the weighted sum of its dynamic values (0 for a rejection)."""
    key = (pool.ordinal, id(capacity))
    known = setup.memo.get(key)
    bounded = False  # a bound known: `optimistic` looked in the free memo already, this cycle
    if known is not None and known[0] is capacity:
        if known[1] is not None:
            return known[1], known[2]
        bounded = True
    free = setup.free_memo
    if free is not None and not bounded:
        known = _free_verdict(ctx, setup, cluster, pool, capacity, key)
        if known is not None:
            return known[1], known[2]
    verdict = _fit(ctx, setup, cluster, pool, capacity)
    values = verdict[1]
    total = 0.0 if values is None else weighted(values, setup.plan.dynamic_scores)
    entry = (capacity, verdict, total)
    _remember(setup.memo, key, entry)
    pods = verdict[0]
    if free is not None and not isinstance(pods, Rejection) and cycle_free(ctx, setup, cluster, pool, capacity, pods):
        _remember(free, key, entry)
    return verdict, total


def cycle_free(
    ctx: RequestContext,
    setup: Setup,
    cluster: ClusterView,
    pool: PoolView,
    capacity: PoolCapacity,
    pods: tuple[NodeAllocation, ...],
) -> bool:
    """Every per-cycle score reads nothing of the cycle on these nodes (`Score.cycle_free`)."""
    dynamic = setup.plan.dynamic_scores
    for i in setup.per_cycle_at:  # noqa: SIM110  (no generator: asked for most pools judged)
        if not dynamic[i][0].cycle_free(ctx, cluster, pool, capacity, pods):
            return False
    return True


def _free_verdict(
    ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity, key: tuple
) -> tuple | None:
    """The whole verdict an earlier cycle kept for this pool and capacity (`Setup.free_memo`), when the
    per-cycle scores are still cycle-free on its nodes; remembered for this cycle too."""
    assert setup.free_memo is not None, "asked only of setups with per-cycle scores"
    kept = setup.free_memo.get(key)
    if kept is None or kept[0] is not capacity or not cycle_free(ctx, setup, cluster, pool, capacity, kept[1][0]):
        return None
    _remember(setup.memo, key, kept)
    return kept


def optimistic(
    ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity
) -> float:
    """Weighted sum of the dynamic scores' upper bounds (exact values when already known); -1 when
    the pool is known not to fit the request."""
    key = (pool.ordinal, id(capacity))
    known = setup.memo.get(key)
    if known is not None and known[0] is capacity:
        if known[1] is not None:
            return -1.0 if known[1][1] is None else known[2]
        return known[2]
    dynamic = setup.plan.dynamic_scores
    if setup.lasting_memo is None:
        bound = weighted([s.upper_bound(ctx, cluster, pool, capacity) for s, _ in dynamic], dynamic)
    else:
        known = _free_verdict(ctx, setup, cluster, pool, capacity, key)
        if known is not None:  # exact, as `exact` would find it
            return known[2]
        known = _lasting(setup, pool, capacity)
        if known[1] is not None and known[1][1] is None:  # an earlier cycle found it does not fit
            _remember(setup.memo, key, (capacity, known[1], 0.0))
            return -1.0
        lasting = _lasting_bounds(ctx, setup, cluster, pool, capacity, known)
        bound = lasting[2]
        if bound is None:
            now = _per_cycle_bounds(ctx, setup, cluster, pool, capacity)
            bound = _with_per_cycle(setup, lasting[0], lasting[1], now)
    _remember(setup.memo, key, (capacity, None, bound))
    return bound


def _lasting_bounds(
    ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity, known: tuple
) -> tuple:
    """The bounds kept across cycles (`known` is `_lasting`'s answer), worked out on first need:
    (the lasting scores' upper bounds, their weighted sum or None, the whole bound or None)."""
    lasting = known[2]
    if lasting is None:
        dynamic = setup.plan.dynamic_scores
        bounds = tuple(s.upper_bound(ctx, cluster, pool, capacity) for s, _ in dynamic if not s.per_cycle)
        # their weighted sum serves only when the per-cycle scores come last (`_with_per_cycle`)
        last = setup.per_cycle_at[0] == len(bounds)
        prefix = weighted(bounds, [d for d in dynamic if not d[0].per_cycle]) if last else None
        whole = None
        if setup.fixed_per_cycle_bounds:  # the same whatever the cycle: kept with the lasting ones
            whole = _with_per_cycle(setup, bounds, prefix, _per_cycle_bounds(ctx, setup, cluster, pool, capacity))
        lasting = (bounds, prefix, whole)
        assert setup.lasting_memo is not None, "asked only of setups with per-cycle scores"
        _remember(setup.lasting_memo, (pool.ordinal, id(capacity)), (capacity, known[1], lasting))
    return lasting


def bound_in_any_cycle(
    ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity
) -> float:
    """A cycle's own setup whose per-cycle scores keep the default bound: the pool's optimistic value,
    which no cycle changes (what a later cycle's ranking starts from in place of an exact total)."""
    return _lasting_bounds(ctx, setup, cluster, pool, capacity, _lasting(setup, pool, capacity))[2]


def _per_cycle_bounds(
    ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity
) -> list[float]:
    dynamic = setup.plan.dynamic_scores
    return [dynamic[i][0].upper_bound(ctx, cluster, pool, capacity) for i in setup.per_cycle_at]


def _with_per_cycle(setup: Setup, bounds: tuple[float, ...], prefix: float | None, per_cycle: list[float]) -> float:
    """`weighted` of the lasting and per-cycle values merged, from the lasting ones' weighted sum
    (`prefix`) when the per-cycle scores come last (the sum runs in the same order, so it is the
    same number)."""
    at = setup.per_cycle_at
    dynamic = setup.plan.dynamic_scores
    if at[0] != len(bounds):
        return weighted(_merged(setup, bounds, per_cycle), dynamic)
    assert prefix is not None, "worked out whenever the per-cycle scores come last"
    total = prefix
    for i, v in zip(at, per_cycle, strict=True):
        total += v * dynamic[i][1]
    return total


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
