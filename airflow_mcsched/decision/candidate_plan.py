"""The lasting part of a request's candidates: which pools it may ever use, and their static scores.

Built in three shared layers, each keyed by the `signature` of the plugins involved, so the many
requests of a queue that look alike (mapped tasks, the same step in many DAG runs, same shape
and GPU types) judge the fleet once per cycle:

1. lasting filters -> the pools that pass and the rejections (key: each filter's signature);
2. static scores -> one column of raw values per score over those pools (key: its signature);
3. the plan itself: normalised, weighted and sorted (key: the layers' keys and the weights).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.filters.base import Filter, Scope
from airflow_mcsched.decision.outcome import Rejection
from airflow_mcsched.decision.scores.base import Score
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


@dataclass(frozen=True, slots=True)
class CandidatePlan:
    """Eligible pools (best static score first, ties in fleet order), and the lasting rejections.

    `rejections` holds (fleet position, rejection) pairs so they can be merged with later ones.
    """

    eligible: tuple[Eligible, ...]
    rejections: tuple[tuple[int, Rejection], ...]
    static_scores: tuple[tuple[Score, float], ...]
    dynamic_scores: tuple[tuple[Score, float], ...]
    dynamic_bound: float
    weight_sum: float


def _cluster_verdict(ctx: RequestContext, filters: Sequence[Filter], cluster: ClusterView) -> Rejection | None:
    """Request-independent cluster filters (state, health, staleness), judged once per cycle."""
    cache = ctx.cycle.cluster_verdicts
    if cluster.name in cache:
        return cache[cluster.name]  # type: ignore[return-value]
    verdict = None
    for f in filters:
        message = f.check(ctx, cluster, None, None)
        if message is not None:
            verdict = Rejection(cluster.name, None, f.reason, message, lasting=True)
            break
    cache[cluster.name] = verdict
    return verdict


def _judge(ctx: RequestContext, lasting: Sequence[Filter]) -> LastingVerdicts:
    independent = [f for f in lasting if f.request_independent and f.scope is Scope.CLUSTER]
    by_cluster = [f for f in lasting if not f.request_independent and f.scope is Scope.CLUSTER]
    by_pool = [f for f in lasting if f.scope is Scope.POOL]
    verdicts = ctx.cycle.cluster_verdicts
    rejections: list[tuple[int, Rejection]] = []
    passed: list[tuple[ClusterView, PoolView]] = []
    for cluster in ctx.cycle.view.clusters:
        if not cluster.pools:
            continue
        name = cluster.name
        rejection = verdicts[name] if name in verdicts else _cluster_verdict(ctx, independent, cluster)
        if rejection is None:
            for f in by_cluster:
                message = f.check(ctx, cluster, None, None)
                if message is not None:
                    rejection = Rejection(cluster.name, None, f.reason, message, lasting=True)
                    break
        if rejection is not None:
            rejections.append((cluster.pools[0].ordinal, rejection))
            continue
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
    return LastingVerdicts(tuple(passed), tuple(rejections))


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
        spread = max(sum(t) for t in zip(*(columns[i] for i in dollar_columns), strict=True))
        for i in dollar_columns:
            columns[i] = [1 - v / spread for v in columns[i]] if spread > 0 else [1.0] * n
    weighted = [[v * w for v in column] for column, (_, w) in zip(columns, static, strict=True)]
    totals = [sum(t) for t in zip(*weighted, strict=True)] if weighted else [0.0] * n
    values = list(zip(*columns, strict=True)) if columns else [()] * n
    eligible = [(-total, p.ordinal, c, p, v) for total, (c, p), v in zip(totals, passed, values, strict=True)]
    eligible.sort()  # fleet positions are unique: ties never compare further
    return eligible


def plan_candidates(ctx: RequestContext, filters: Sequence[Filter], scores: Sequence[Score]) -> CandidatePlan:
    """The request's plan, shared with every request of the cycle alike in the plugins' signatures."""
    cache = ctx.cycle.plans
    lasting = [f for f in filters if f.lasting and f.applies(ctx)]
    lasting_key = tuple((f, f.signature(ctx)) for f in lasting)
    weights = ctx.weights
    active = [(s, getattr(weights, s.name, 1.0)) for s in scores if s.applies(ctx)]
    active = [(s, w) for s, w in active if w > 0]
    static = tuple((s, w) for s, w in active if not s.dynamic)
    static_keys = tuple((s, s.signature(ctx)) for s, _ in static)
    plan_key = ("plan", lasting_key, static_keys, tuple(active))
    plan = cache.get(plan_key)
    if plan is not None:
        return plan  # type: ignore[return-value]
    verdicts = cache.get(lasting_key)
    if verdicts is None:
        verdicts = cache[lasting_key] = _judge(ctx, lasting)
    columns = []
    for s, key in static_keys:
        column_key = ("column", lasting_key, s, key)
        column = cache.get(column_key)
        if column is None:
            column = cache[column_key] = [s.measure(ctx, c, p, None, ()) for c, p in verdicts.passed]
        columns.append(column)
    dynamic = tuple((s, w) for s, w in active if s.dynamic)
    plan = cache[plan_key] = CandidatePlan(
        eligible=tuple(_rank_statically(verdicts.passed, static, columns)),
        rejections=verdicts.rejections,
        static_scores=static,
        dynamic_scores=dynamic,
        dynamic_bound=sum(w for _, w in dynamic),
        weight_sum=sum(w for _, w in active) or 1.0,
    )
    return plan
