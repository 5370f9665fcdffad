"""Turn the best feasible pools into explained candidates: the score, its parts and their figures."""

from __future__ import annotations

from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.outcome import ScoredCandidate, ScorePart
from airflow_mcsched.decision.pool_judgement import MAX_REMEMBERED, Feasible, Setup
from airflow_mcsched.decision.scores.base import Score
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import ClusterView, PoolView

_new = tuple.__new__


def scored_candidate(ctx: RequestContext, setup: Setup, f: Feasible, with_figures: bool = True) -> ScoredCandidate:
    """Score = weighted mean of the score values, in [0, 1]; each part keeps its value and weight, and
    (`with_figures`, for the chosen pool) the figures behind it."""
    cluster, pool = f.cluster, f.pool
    dynamic = setup.plan.dynamic_scores
    # ScoreParts made as the tuples they are, without their Python-level constructor: many are made
    if with_figures:
        capacity, pods = f.capacity, f.pods
        parts = [
            _new(ScorePart, (s.name, v, w, _figures(ctx, s, cluster, pool, capacity, pods)))
            for (s, w), v in zip(dynamic, f.dynamic_values, strict=True)
        ]
    else:
        parts = [_new(ScorePart, (s.name, v, w, ())) for (s, w), v in zip(dynamic, f.dynamic_values, strict=True)]
    return ScoredCandidate(
        cluster=cluster.name,
        pool=pool.name,
        score=f.total / setup.plan.weight_sum,
        parts=(*_static_parts(ctx, setup, f, with_figures), *parts),
        price_per_gpu_hour=pool.price_for(ctx.request.interruptible),
        pods=f.pods,
    )


def _figures(
    ctx: RequestContext,
    score: Score,
    cluster: ClusterView,
    pool: PoolView,
    capacity: PoolCapacity,
    pods: tuple[NodeAllocation, ...],
) -> tuple[tuple[str, float | str | bool], ...]:
    """The score's figures; a dollar score that the work's stakes weigh more (`Policy.stake_level`)
    also says why its weight is what it is: the GPU-hours at stake, the policy's threshold, and how
    many times the score counts."""
    figures = score.explain(ctx, cluster, pool, capacity, pods)
    if not ctx.stake_level or score.name not in ctx.cycle.dollar_scores:
        return figures
    threshold = ctx.cycle.policy.dollars_at_stake_gpu_hours
    assert threshold is not None, "work is staked only when the policy sets a threshold"
    return (
        *figures,
        ("gpu_hours_at_stake", ctx.gpu_hours),
        ("stakes_from_gpu_hours", threshold),
        ("weighed_times", 1 + ctx.stake_level),
    )


def _static_parts(ctx: RequestContext, setup: Setup, f: Feasible, with_figures: bool) -> tuple[ScorePart, ...]:
    """The static scores' parts of a pool, made once per setup: their values and figures, like the
    plan's static columns, read the request's signature and the pool, never its capacity
    (scores/base.py), so a grant in the pool changes only the dynamic parts."""
    key = (f.pool.ordinal, with_figures)
    known = setup.static_parts.get(key)
    if known is None:
        cluster, pool, capacity, pods = f.cluster, f.pool, f.capacity, f.pods
        static = zip(setup.plan.static_scores, f.static_values, strict=True)
        if with_figures:
            known = tuple(
                _new(ScorePart, (s.name, v, w, _figures(ctx, s, cluster, pool, capacity, pods))) for (s, w), v in static
            )
        else:
            known = tuple(_new(ScorePart, (s.name, v, w, ())) for (s, w), v in static)
        if len(setup.static_parts) >= MAX_REMEMBERED:
            setup.static_parts.clear()
        setup.static_parts[key] = known
    return known


def remembered_candidate(ctx: RequestContext, setup: Setup, f: Feasible, with_figures: bool) -> ScoredCandidate:
    """`scored_candidate`, made once for every request sharing the setup while the pool's capacity
    object and the dynamic values are the same, in this cycle and later ones on the view.

    Scores and their figures depend on the request's signature, the pool and its capacity only,
    but for per-cycle scores (which also read the clock and the running work): their values are
    compared, and for the chosen pool their figures too, unless the verdict's stamp is the one they
    were made under (then they read the same: pool_stamps.py). A later cycle's values are most
    often the same (a pod that ends before its node frees, or goes to an empty node, does not read
    the clock), and then so is the candidate, its summary included (admission.py)."""
    key = (f.pool.ordinal, id(f.capacity), with_figures)
    scored = setup.scored
    known = scored.get(key)
    per_cycle = with_figures and f.stamp is not None  # the chosen pool's figures may read the cycle
    figures = None
    if (
        known is not None
        and known[0] is f.capacity  # held in the entry: its id is its own
        and known[1] == f.dynamic_values
        and (known[2].pods is f.pods or known[2].pods == f.pods)
    ):
        if not per_cycle or known[3] is f.stamp:
            return known[2]
        figures = _per_cycle_figures(ctx, setup, f)
        if figures == known[4]:
            scored[key] = (*known[:3], f.stamp, figures)
            return known[2]
    candidate = scored_candidate(ctx, setup, f, with_figures)
    if per_cycle and figures is None:
        figures = _per_cycle_figures(ctx, setup, f)
    if len(scored) >= MAX_REMEMBERED:
        scored.clear()
    scored[key] = (f.capacity, f.dynamic_values, candidate, f.stamp, figures)
    return candidate


def _per_cycle_figures(ctx: RequestContext, setup: Setup, f: Feasible) -> tuple:
    """The figures of the per-cycle scores for this pool now (the only parts a cycle may change)."""
    dynamic = setup.plan.dynamic_scores
    return tuple(_figures(ctx, dynamic[i][0], f.cluster, f.pool, f.capacity, f.pods) for i in setup.per_cycle_at)
