"""Turn the best feasible pools into explained candidates: the score, its parts and their figures."""

from __future__ import annotations

from airflow_mcsched.decision.candidate_plan import CandidatePlan
from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.outcome import ScoredCandidate, ScorePart
from airflow_mcsched.decision.pool_judgement import Feasible


def scored_candidate(
    ctx: RequestContext, plan: CandidatePlan, f: Feasible, with_figures: bool = True
) -> ScoredCandidate:
    """Score = weighted mean of the score values, in [0, 1]; each part keeps its value and weight, and
    (`with_figures`, for the chosen pool) the figures behind it."""
    cluster, pool = f.cluster, f.pool
    scores = (*plan.static_scores, *plan.dynamic_scores)
    values = (*f.static_values, *f.dynamic_values)
    parts = [
        ScorePart(s.name, v, w, s.explain(ctx, cluster, pool, f.capacity, f.pods) if with_figures else ())
        for (s, w), v in zip(scores, values, strict=True)
    ]
    return ScoredCandidate(
        cluster=cluster.name,
        pool=pool.name,
        score=f.total / plan.weight_sum,
        parts=tuple(parts),
        price_per_gpu_hour=pool.price_for(ctx.request.interruptible),
        pods=f.pods,
    )
