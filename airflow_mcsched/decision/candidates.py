"""Find the best node pools for one request now, and when none fits, every pool's reason.

Two ways over the same verdicts:

- the fast way (`PoolRanking`, kept per plan and demand for the whole cycle) pops pools best-first
  and stops as soon as the `want` best are certain: the usual cost of an admission is a handful of
  pools whatever the size of the fleet;
- the full scan, used when nothing fits, judges every eligible pool so that the decision names a
  reason for each.

Both read the same per-pool verdicts (`pool_judgement`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from airflow_mcsched.decision.candidate_plan import CandidatePlan
from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.filters.base import Filter
from airflow_mcsched.decision.outcome import Rejection
from airflow_mcsched.decision.pool_judgement import Feasible, Setup, exact, live_rejection, setup_for
from airflow_mcsched.decision.pool_ranking import ranking_for, remember_start
from airflow_mcsched.decision.scores.base import Score


@dataclass(slots=True)
class Evaluation:
    setup: Setup
    plan: CandidatePlan
    feasible: list[Feasible] = field(default_factory=list)
    judged: list[tuple[int, Rejection]] = field(default_factory=list)

    @property
    def rejections(self) -> tuple[Rejection, ...]:
        """Lasting and live rejections together, in fleet order."""
        if not self.judged:
            return self.plan.lasting_rejections
        merged = [*self.plan.rejections, *self.judged]
        merged.sort(key=_position)
        return tuple(r for _, r in merged)


def _position(entry: tuple[int, Rejection]) -> int:
    return entry[0]


def evaluate(ctx: RequestContext, filters: Sequence[Filter], scores: Sequence[Score], want: int = 1) -> Evaluation:
    """The `want` best feasible pools (best first), or, when none fits, every pool's rejection."""
    setup = setup_for(ctx, filters, scores)
    out = Evaluation(setup, setup.plan)
    ranking = ranking_for(ctx, setup)
    out.feasible = ranking.best(ctx, setup, want)
    remember_start(ctx, setup, ranking)
    if not out.feasible:
        _scan(ctx, setup, out)
    return out


def _scan(ctx: RequestContext, setup: Setup, out: Evaluation) -> None:
    """Judge every eligible pool in fleet order of static score, recording each rejection."""
    overlay = ctx.cycle.overlay
    changed = overlay.by_ordinal
    judged = out.judged
    cluster_rejected: dict[str, bool] = {}
    for _, ordinal, cluster, pool, _ in setup.plan.eligible:
        if cluster_rejected.get(cluster.name):
            continue
        capacity = changed.get(ordinal) or overlay.capacity(pool)
        rejection = live_rejection(ctx, setup, cluster, pool, capacity, None)
        if rejection is None:
            verdict, _ = exact(ctx, setup, cluster, pool, capacity)
            if isinstance(verdict, Rejection):
                rejection = (ordinal, verdict)
            else:
                rejection = live_rejection(ctx, setup, cluster, pool, capacity, verdict)
        if rejection is not None:
            if rejection[1].pool is None:
                cluster_rejected[cluster.name] = True
            judged.append(rejection)
