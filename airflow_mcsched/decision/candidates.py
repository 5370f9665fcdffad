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
from operator import itemgetter

from airflow_mcsched.decision.candidate_plan import CandidatePlan
from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.filters.base import Filter
from airflow_mcsched.decision.outcome import Rejection
from airflow_mcsched.decision.plan_cache import MAX_FIT_MEMOS
from airflow_mcsched.decision.pool_judgement import Feasible, Setup, exact, live_rejection, setup_for
from airflow_mcsched.decision.pool_ranking import ranking_for, remember_start
from airflow_mcsched.decision.reasons import CAPACITY_REASONS
from airflow_mcsched.decision.scores.base import Score


@dataclass(slots=True)
class Evaluation:
    setup: Setup
    plan: CandidatePlan
    feasible: list[Feasible] = field(default_factory=list)
    judged: list[tuple[int, Rejection]] | tuple[tuple[int, Rejection], ...] = field(default_factory=list)

    @property
    def rejections(self) -> tuple[Rejection, ...]:
        """Lasting and live rejections together, in fleet order."""
        if not self.judged:
            return self.plan.lasting_rejections
        merged = [*self.plan.rejections, *self.judged]
        merged.sort(key=_position)
        return tuple(map(_rejection, merged))


_position = itemgetter(0)  # a fleet position: (position, rejection) pairs sort by it alone
_rejection = itemgetter(1)


def evaluate(ctx: RequestContext, filters: Sequence[Filter], scores: Sequence[Score], want: int = 1) -> Evaluation:
    """The `want` best feasible pools (best first), or, when none fits, every pool's rejection."""
    setup = setup_for(ctx, filters, scores)
    out = Evaluation(setup, setup.plan)
    fits_nowhere = _fits_nowhere_key(ctx, setup)
    if fits_nowhere is not None:
        # by the plan's lasting rejections too (which pools are eligible): requests of one demand have
        # many plans; the entry holds them, so their id stays their own
        fits_nowhere = (fits_nowhere, ctx.cycle.capacity_state, id(setup.plan.rejections))
        known = ctx.cycle.memory.fits_nowhere.get(fits_nowhere)
        if known is not None and known[0] is setup.plan.rejections:
            out.judged = known[1]  # shared, read-only: admission works out its reason once
            return out
    ranking = ranking_for(ctx, setup)
    out.feasible = ranking.best(ctx, setup, want)
    remember_start(ctx, setup, ranking)
    if not out.feasible:
        _scan(ctx, setup, out)
        if fits_nowhere is not None and {r.reason for _, r in out.judged} <= CAPACITY_REASONS:
            remembered = ctx.cycle.memory.fits_nowhere
            if len(remembered) >= MAX_FIT_MEMOS:
                remembered.clear()
            remembered[fits_nowhere] = (setup.plan.rejections, tuple(out.judged))
    return out


def _fits_nowhere_key(ctx: RequestContext, setup: Setup) -> tuple | None:
    """What a request that fits no pool shares with later ones that fit none either.

    When no live filter applies, a pool's verdict for a request that does not fit there is the fit
    filters' or the node chooser's, which read the demand and the pool's capacity only. So a later
    request of the same demand, over the same eligible pools (the same lasting verdicts), on the same
    capacity objects, gets the same rejections: its walk over the fleet is skipped. This is the
    common case of a long queue, where many requests of a few shapes wait behind full pools; and
    the same requests again in the next cycle, which reaches the same capacity state's token
    (`CycleState.capacity_state`) while it changes what the cycle before changed.
    """
    if setup.by_cluster or setup.by_capacity:
        return None  # quota, reserved GPUs, spread groups: verdicts of the team, priority or group
    return (ctx.demand, tuple(setup.fit_filters))


def _scan(ctx: RequestContext, setup: Setup, out: Evaluation) -> None:
    """Judge every eligible pool in fleet order of static score, recording each rejection."""
    overlay = ctx.cycle.overlay
    changed = overlay.by_ordinal
    judged = out.judged
    assert isinstance(judged, list), "a scan records into its own evaluation, not a shared one"
    cluster_rejected: dict[str, bool] = {}
    live_filters = setup.by_cluster or setup.by_capacity  # else no check before the verdict's
    memo = setup.memo
    for _, ordinal, cluster, pool, _ in setup.plan.eligible:
        if cluster_rejected.get(cluster.name):
            continue
        capacity = changed.get(ordinal) or overlay.capacity(pool)
        rejection = live_rejection(ctx, setup, cluster, pool, capacity, None) if live_filters else None
        if rejection is None:
            # `exact`'s memo read here where it holds in any cycle (a request that waits on a full fleet
            # scans a hundred pools or more, and most are rejections judged before)
            known = memo.get((ordinal, id(capacity)))
            if known is None or known[0] is not capacity or known[1] is None or known[3] is not None:
                known = exact(ctx, setup, cluster, pool, capacity)
            verdict = known[1][0]  # type: ignore[index]  # exact's: a verdict
            if isinstance(verdict, Rejection):
                rejection = (ordinal, verdict)
            else:
                rejection = live_rejection(ctx, setup, cluster, pool, capacity, verdict)
        if rejection is not None:
            if rejection[1].pool is None:
                cluster_rejected[cluster.name] = True
            judged.append(rejection)
