"""The lasting part of a request's candidates: which pools it may ever use, and their static scores.

Built in three shared layers, each keyed by the `signature` of the plugins involved, so the many
requests of a queue that look alike (mapped tasks, the same step in many DAG runs, same shape
and GPU types) judge the fleet once per view (kept between cycles, see plan_cache.py):

1. lasting filters -> the pools that pass and the rejections (key: each filter's signature);
2. static scores -> one column of raw values per score over those pools (key: its signature);
3. the plan itself: normalised, weighted and sorted (key: the layers' keys and the weights).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import partial

from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.filters.base import Filter, Scope
from airflow_mcsched.decision.outcome import Rejection
from airflow_mcsched.decision.plan_cache import MAX_LASTING, SharedPlans
from airflow_mcsched.decision.scores.base import Score
from airflow_mcsched.view.bounded_table import get_or_make
from airflow_mcsched.view.snapshot import ClusterView, PoolView

Eligible = tuple[float, int, ClusterView, PoolView, tuple[float, ...]]
"""(-static total, fleet position, cluster, pool, static score values): a pool no lasting filter rejects.

Plain tuples, sorted as they are (best static score first, ties in fleet order): a plan holds one
per pool of the fleet, so they are kept as light as possible.
"""


@dataclass(frozen=True, slots=True)
class LastingVerdicts:
    """Pools that pass every lasting filter, and (fleet position, rejection) for the others."""

    passed: tuple[tuple[ClusterView, PoolView], ...]
    rejections: tuple[tuple[int, Rejection], ...]
    lasting_rejections: tuple[Rejection, ...]
    """The rejections alone: every plan made of these verdicts holds this one tuple."""


@dataclass(frozen=True, slots=True)
class CandidatePlan:
    """Eligible pools (best static score first, ties in fleet order), and the lasting rejections.

    `rejections` holds (fleet position, rejection) pairs so they can be merged with later ones;
    `lasting_rejections` the rejections alone. `by_ordinal` and `start_order` are where a ranking of
    the plan starts (see pool_ranking.py), made once with the plan.
    """

    eligible: tuple[Eligible, ...]
    rejections: tuple[tuple[int, Rejection], ...]
    static_scores: tuple[tuple[Score, float], ...]
    dynamic_scores: tuple[tuple[Score, float], ...]
    dynamic_bound: float
    weight_sum: float
    lasting_rejections: tuple[Rejection, ...] = field(default=(), compare=False, repr=False)
    by_ordinal: dict[int, Eligible] = field(default_factory=dict, compare=False, repr=False)
    start_order: tuple[tuple[float, int, int], ...] = field(default=(), compare=False, repr=False)
    """Each eligible pool at its most optimistic total, best first (as a ranking pops them)."""
    _waiting_places: dict[int, int] = field(default_factory=dict, compare=False, repr=False)

    def waiting_places(self) -> dict[int, int]:
        """Each eligible pool's place, by its fleet position, in the rejections of a request that no
        eligible pool takes (the lasting ones and one per eligible pool, in fleet order): where a
        waiting request's rejection of the pool goes when only some were judged again
        (admission.py). Worked out the first time a request of the plan waits twice."""
        places = self._waiting_places
        if not places:
            positions = sorted([*(p for p, _ in self.rejections), *self.by_ordinal])
            places.update({p: i for i, p in enumerate(positions)})
        return places


def _first_rejection(ctx: RequestContext, filters: Sequence[Filter], cluster: ClusterView) -> Rejection | None:
    for f in filters:
        message = f.check(ctx, cluster, None, None)
        if message is not None:
            return Rejection(cluster.name, None, f.reason, message, lasting=True)
    return None


def _judge_clusters(ctx: RequestContext, filters: Sequence[Filter]) -> dict[str, Rejection | None]:
    """Request-independent cluster filters (state, health, staleness): the same for every request."""
    independent = [
        f for f in filters if f.lasting and f.request_independent and f.scope is Scope.CLUSTER and f.applies(ctx)
    ]
    return {c.name: _first_rejection(ctx, independent, c) for c in ctx.cycle.view.clusters if c.pools}


def shared_plans(ctx: RequestContext, filters: Sequence[Filter]) -> SharedPlans:
    """Where this cycle finds and keeps its plans: shared with every cycle on a view of the same layout,
    policy and plugins whose clusters are ruled out alike and whose fleet has as many GPUs of each
    type. Those are the two things plans read of a capacity read, beside the layout: the cluster
    verdicts read the clock, the read times and the read errors; `scarcity` the fleet's GPUs by
    type, which a failed read or a node come or gone changes."""
    cycle = ctx.cycle
    if cycle.shared is None:
        clock = (cycle.now, tuple((c.observed_at, c.error) for c in cycle.view.clusters))
        verdicts = cycle.memory.cluster_verdicts(clock, partial(_judge_clusters, ctx, filters))
        cycle.cluster_verdicts = verdicts
        ruled_out = tuple(r for r in verdicts.values() if r is not None)
        cycle.shared = cycle.memory.shared((ruled_out, tuple(cycle.fleet_gpus().items())))
    return cycle.shared


ClusterVerdicts = tuple[str, int, tuple[tuple[ClusterView, PoolView], ...], tuple[tuple[int, Rejection], ...]]
"""(cluster name, its first pool's fleet position, its pools that pass, its rejections): what the
lasting filters that read the request say of one cluster, while no cluster verdict rules it out."""


def _judge(ctx: RequestContext, lasting: Sequence[Filter], key: Hashable) -> LastingVerdicts:
    """The lasting verdicts: the cycle's cluster verdicts (state, health, staleness), and where they
    rule nothing out, what the other lasting filters say (`_judge_fleet`, kept by `key` across sets
    of cluster verdicts: a read that fails or grows old changes the set, and every plan is made
    again; the filters need not be)."""
    memory = ctx.cycle.memory
    by_cluster = get_or_make(memory.fleet_verdicts, key, MAX_LASTING, partial(_judge_fleet, ctx, lasting))
    verdicts = ctx.cycle.cluster_verdicts
    assert verdicts is not None, "shared_plans judges the clusters first"
    rejections: list[tuple[int, Rejection]] = []
    passed: list[tuple[ClusterView, PoolView]] = []
    for name, first, cluster_passed, cluster_rejections in by_cluster:
        rejection = verdicts[name]
        if rejection is not None:
            rejections.append((first, rejection))
        else:
            passed += cluster_passed
            rejections += cluster_rejections
    return LastingVerdicts(tuple(passed), tuple(rejections), tuple([r for _, r in rejections]))


def _judge_fleet(ctx: RequestContext, lasting: Sequence[Filter]) -> tuple[ClusterVerdicts, ...]:
    """What the lasting filters that read the request say of each cluster with pools, in fleet order:
    the first cluster-wide rejection, else each pool's first rejection or its pass."""
    by_cluster = [f for f in lasting if not f.request_independent and f.scope is Scope.CLUSTER]
    by_pool = [f for f in lasting if f.scope is Scope.POOL]
    out: list[ClusterVerdicts] = []
    for cluster in ctx.cycle.view.clusters:
        if not cluster.pools:
            continue
        first = cluster.pools[0].ordinal
        rejection = _first_rejection(ctx, by_cluster, cluster) if by_cluster else None
        if rejection is not None:
            out.append((cluster.name, first, (), ((first, rejection),)))
            continue
        passed: list[tuple[ClusterView, PoolView]] = []
        rejections: list[tuple[int, Rejection]] = []
        for pool in cluster.pools:
            for f in by_pool:
                message = f.check(ctx, cluster, pool, None)
                if message is not None:
                    rejections.append(
                        (pool.ordinal, Rejection(cluster.name, pool.name, f.reason, message, lasting=True))
                    )
                    break
            else:
                passed.append((cluster, pool))
        out.append((cluster.name, first, tuple(passed), tuple(rejections)))
    return tuple(out)


def _rank_statically(
    passed: Sequence[tuple[ClusterView, PoolView]],
    static: tuple[tuple[Score, float], ...],
    columns: list[list[float]],
) -> list[Eligible]:
    """Normalise dollar columns together, weight, sum and sort (comprehensions: cheap at scale).

    Each dollar column is taken relative to its cheapest pool, and all of them are divided by the
    largest summed extra cost: the cheapest pool scores 1, the dearest 0 overall, and a dollar counts
    the same in every column.
    """
    n = len(passed)
    dollar_columns = [i for i, (s, _) in enumerate(static) if s.in_dollars]
    if dollar_columns and n:
        columns = list(columns)
        for i in dollar_columns:
            cheapest = min(columns[i])
            columns[i] = [v - cheapest for v in columns[i]]
        spread = max(map(sum, zip(*[columns[i] for i in dollar_columns], strict=True)))
        for i in dollar_columns:
            columns[i] = [1 - v / spread for v in columns[i]] if spread > 0 else [1.0] * n
    weighted = [[v * w for v in column] for column, (_, w) in zip(columns, static, strict=True)]
    negated = [-total for total in map(sum, zip(*weighted, strict=True))] if weighted else [-0.0] * n
    values = list(zip(*columns, strict=True)) if columns else [()] * n
    # Sorted as the tuples (-total, fleet position) would sort, by a float key alone: `passed` is in
    # fleet order (ascending positions) and the sort is stable, so equal totals keep fleet order. A
    # sort of plain floats is several times quicker than one of tuples, and a queue of new requests
    # makes hundreds of plans a cycle.
    eligible = []
    for i in sorted(range(n), key=negated.__getitem__):
        cluster, pool = passed[i]
        eligible.append((negated[i], pool.ordinal, cluster, pool, values[i]))
    return eligible


def _column(
    ctx: RequestContext, cache: dict, score: Score, key: tuple, passed: Sequence[tuple[ClusterView, PoolView]]
) -> list[float]:
    """A static score over the pools that passed, each pool measured once per score signature
    whatever lasting filters let it through: the first column is measured outright (the usual case
    of one plan per signature), later ones reuse its values by fleet position."""
    values_key = ("values", score, key)
    known = cache.get(values_key)
    if known is None:
        column = score.static_column(ctx, passed)
        cache[values_key] = (passed, column)
        return column
    if isinstance(known, tuple):  # the first column's values, indexed now that a second one asks
        first_passed, first_column = known
        known = cache[values_key] = {p.ordinal: v for (_, p), v in zip(first_passed, first_column, strict=True)}
    missing = [(c, p) for c, p in passed if p.ordinal not in known]
    if missing:
        known.update(zip([p.ordinal for _, p in missing], score.static_column(ctx, missing), strict=True))
    return [known[p.ordinal] for _, p in passed]


def plan_candidates(ctx: RequestContext, filters: Sequence[Filter], scores: Sequence[Score]) -> CandidatePlan:
    """The request's plan, shared with every request alike in the plugins' signatures, in this cycle
    and in later ones on the same view."""
    shared = shared_plans(ctx, filters)
    cache, lasting_cache = shared.plans, shared.lasting
    lasting = [f for f in filters if f.lasting and f.applies(ctx)]
    lasting_key = tuple((f, f.signature(ctx)) for f in lasting)
    weights = ctx.weights
    active = [(s, getattr(weights, s.name, 1.0)) for s in scores if s.applies(ctx)]
    active = [(s, w) for s, w in active if w > 0]
    static = tuple((s, w) for s, w in active if not s.dynamic)
    static_keys = tuple((s, s.signature(ctx)) for s, _ in static)
    plan_key = ("plan", lasting_key, static_keys, tuple(active))
    plan = cache.get(plan_key) or shared.from_older("plans", plan_key)
    if plan is not None:
        return plan  # type: ignore[return-value]
    verdicts = lasting_cache.get(lasting_key)
    if verdicts is None:
        verdicts = lasting_cache[lasting_key] = _judge(ctx, lasting, lasting_key)
    columns = []
    for s, key in static_keys:
        column_key = ("column", lasting_key, s, key)
        column = lasting_cache.get(column_key)
        if column is None:
            column = lasting_cache[column_key] = _column(ctx, lasting_cache, s, key, verdicts.passed)
        columns.append(column)
    dynamic = tuple((s, w) for s, w in active if s.dynamic)
    eligible = _rank_statically(verdicts.passed, static, columns)
    bound = sum(w for _, w in dynamic)
    # eligible's order, but for a difference that ties where two totals did not
    start_order = sorted([(e[0] - bound, e[1], 0) for e in eligible])
    plan = cache[plan_key] = CandidatePlan(
        eligible=tuple(eligible),
        rejections=verdicts.rejections,
        static_scores=static,
        dynamic_scores=dynamic,
        dynamic_bound=bound,
        weight_sum=sum(w for _, w in active) or 1.0,
        lasting_rejections=verdicts.lasting_rejections,
        by_ordinal={e[1]: e for e in eligible},
        start_order=tuple(start_order),
    )
    return plan
