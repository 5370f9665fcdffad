"""Find the best node pools for one request now, and when none fits, every pool's reason.

Two ways over the same verdicts:

- the fast way (`PoolRanking`, kept per plan and demand for the whole cycle) pops pools best-first
  and stops as soon as the `want` best are certain: the usual cost of an admission is a handful of
  pools whatever the size of the fleet;
- the full scan, used when nothing fits, judges every eligible pool so that the decision names a
  reason for each; for a request whose verdicts read its demand and capacity alone, a scan kept
  from an earlier cycle is taken again for every pool whose capacity object is the same, and only
  the others are judged (`_rescan`: a long queue's waiting requests are scanned every cycle).

Both read the same per-pool verdicts (`pool_judgement`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import is_, is_not, itemgetter
from typing import cast

from airflow_mcsched.decision.candidate_plan import CandidatePlan
from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.filters.base import Filter
from airflow_mcsched.decision.outcome import Rejection
from airflow_mcsched.decision.pool_judgement import Feasible, Setup, exact, live_rejection, setup_for
from airflow_mcsched.decision.pool_ranking import ranking_for, remember_start
from airflow_mcsched.decision.reasons import CAPACITY_REASONS
from airflow_mcsched.decision.scores.base import Score
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import ClusterView, PoolView


@dataclass(slots=True)
class Evaluation:
    setup: Setup
    plan: CandidatePlan
    feasible: list[Feasible] = field(default_factory=list)
    judged: list[tuple[int, Rejection]] | tuple[tuple[int, Rejection], ...] = field(default_factory=list)
    before: tuple[tuple[int, Rejection], ...] | None = None
    """When `judged` is a scan taken again (`_rescan`): the one it was taken from, the same but at
    the places in `rejudged`, which were judged again (admission.py words it from the one before)."""
    rejudged: Sequence[int] = ()

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
    """The `want` best feasible pools (best first), or, when none fits, every pool's rejection.

    A request with no live filter whose demand and plan fit no pool when last scanned (it, or one
    alike, waited) is scanned again first: only the pools whose capacity changed are judged, and
    when none takes it, it waits without a ranking, which for a request that fits nowhere walks
    every eligible pool not known to be full. The ranking is asked only when some pool takes it.
    Either way finds a pool when one fits and the backfill heads allow it, so the outcome is the
    same. (A request alike that comes earlier in a cycle than the one that waited, where most pools
    read differently, judges some of them for nothing before its ranking: a few per cent of the
    benchmark's same-view cycle, which a bound on how many may differ did not pay back on a live fleet.)

    A request with live filters (a team's quota, GPUs kept for some, a spread group: verdicts that
    read its team, its priority or the cycle's grants) that no pool took when last decided
    (`PlanMemory.fitted_nowhere`) is scanned first as well, every eligible pool judged, and ranked
    only when one takes it: on a governed fleet most of a long queue waits, and a ranking that finds
    nothing went over every pool before the scan judged them all again.
    """
    setup = setup_for(ctx, filters, scores)
    out = Evaluation(setup, setup.plan)
    alike = _fits_nowhere_key(ctx, setup)
    memory = ctx.cycle.memory
    fits_nowhere = scan_key = last = None
    if alike is not None:
        # by the plan's lasting rejections too (which pools are eligible): requests of one demand have
        # many plans; the entry holds them, so their id stays their own
        fits_nowhere = (alike, ctx.cycle.capacity_state, id(setup.plan.rejections))
        known = memory.fits_nowhere.get(fits_nowhere)
        if known is None and ctx.cycle.head is not None:
            known = memory.fits_nowhere.get(_behind_heads(ctx, fits_nowhere))
        if known is not None and known[0] is setup.plan.rejections:
            out.judged = known[1]  # shared, read-only: admission works out its reason once
            return out
        scan_key = (alike, id(setup.plan))  # where its last scan is kept (`_rescan`)
        last = memory.last_scans.get(scan_key)
        if last is not None and last.plan is not setup.plan:
            last = None
        if last is not None:
            scan = _rescan(ctx, setup, scan_key, out, last)
            if scan is not None:
                _share(ctx, setup, scan, fits_nowhere)
                return out
    elif memory.fitted_nowhere.get(ctx.request.id):  # live filters, and no pool took it last time
        if _scan(ctx, setup, out, until_fit=True):
            memory.fitted_nowhere[ctx.request.id] = True
            return out
        out.judged = []  # a pool takes it: the ranking finds the best
    ranking = ranking_for(ctx, setup)
    out.feasible = ranking.best(ctx, setup, want)
    remember_start(ctx, setup, ranking)
    if out.feasible:
        return out
    scan = None if scan_key is None else _rescan(ctx, setup, scan_key, out, last)
    if scan is None:
        _scan(ctx, setup, out)
        if alike is None:
            memory.fitted_nowhere[ctx.request.id] = True
        return out
    _share(ctx, setup, scan, fits_nowhere)
    return out


def _share(ctx: RequestContext, setup: Setup, scan: WaitingScan, fits_nowhere: tuple | None) -> None:
    """Later requests alike in this cycle's capacity state take this scan's rejections
    (`_fits_nowhere_key`); those alike in its backfill heads and expected end too, when some
    rejection is a head's (`_behind_heads`)."""
    if fits_nowhere is not None:
        key = fits_nowhere if scan.capacity_only else _behind_heads(ctx, fits_nowhere)
        ctx.cycle.memory.fits_nowhere[key] = (setup.plan.rejections, scan.judged)


def _behind_heads(ctx: RequestContext, fits_nowhere: tuple) -> tuple:
    """Where a scan some of whose rejections are a backfill head's is shared: such a rejection reads
    the cycle's heads (the object and its commits, as `HeldRoom` says) and when the request would end.
    When a head holds a pool that many waiting requests fit, each of them was scanned on its own
    (on a live fleet about 1,000 scans in such a cycle against 350 in the others, and half again the
    cycle's time)."""
    head = ctx.cycle.head
    return (*fits_nowhere, head, 0 if head is None else head.commits, ctx.expected_end)


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
    return setup.fit_key


def _scan(ctx: RequestContext, setup: Setup, out: Evaluation, until_fit: bool = False) -> bool:
    """Judge every eligible pool in order of static score, recording each rejection; False when
    `until_fit` and a pool takes the request (the scan stops there, its rejections partial)."""
    overlay = ctx.cycle.overlay
    changed = overlay.by_ordinal
    judged = out.judged
    assert isinstance(judged, list), "a scan records into its own evaluation, not a shared one"
    cluster_rejected: dict[str, bool] = {}
    live_filters = setup.by_cluster or setup.by_capacity  # else no check before the verdict's
    for _, ordinal, cluster, pool, _ in setup.plan.eligible:
        if cluster_rejected.get(cluster.name):
            continue
        capacity = changed.get(ordinal) or overlay.capacity(pool)
        rejection = live_rejection(ctx, setup, cluster, pool, capacity, None) if live_filters else None
        if rejection is None:
            rejection = _fit_rejection(ctx, setup, cluster, pool, capacity)
        if rejection is not None:
            if rejection[1].pool is None:
                cluster_rejected[cluster.name] = True
            judged.append(rejection)
        elif until_fit:
            return False
    return True


def _fit_rejection(
    ctx: RequestContext, setup: Setup, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity
) -> tuple[int, Rejection] | None:
    """A pool's rejection once the request's own checks passed: the fit verdict's, else (it fits) the
    backfill head's; None when it fits and the head lets it."""
    # `exact`'s memo read here where it holds in any cycle (a request that waits on a full fleet
    # scans a hundred pools or more, and most are rejections judged before)
    known = setup.memo.get((pool.ordinal, id(capacity)))
    if known is None or known[0] is not capacity or known[1] is None or known[3] is not None:
        known = exact(ctx, setup, cluster, pool, capacity)
    verdict = known[1][0]  # type: ignore[index]  # exact's: a verdict
    if isinstance(verdict, Rejection):
        return pool.ordinal, verdict
    return live_rejection(ctx, setup, cluster, pool, capacity, verdict)


@dataclass(frozen=True, slots=True)
class WaitingScan:
    """A scan of a request with no live filter (`_fits_nowhere_key`) that every eligible pool
    rejected: the plan's pools' fleet positions (in its order), the capacity object each was judged
    on, and the rejections, one per pool in that order. Kept per demand and plan, the latest only
    (`PlanMemory.last_scans`): the next scan of the same takes again each rejection for capacity
    whose pool still has that capacity object, and judges only the others (`_rescan`)."""

    plan: CandidatePlan
    ordinals: tuple[int, ...]
    capacities: tuple[PoolCapacity, ...]
    judged: tuple[tuple[int, Rejection], ...]
    rejudge: tuple[int, ...]
    """Where (places in `ordinals`) the rejection is not for capacity: the pool fits, and a backfill
    head keeps it. Such a rejection reads the cycle's heads, so every scan judges it again."""

    @property
    def capacity_only(self) -> bool:
        """Every rejection is for capacity (`CAPACITY_REASONS`): requests alike share the scan in a
        cycle that reaches the same capacity state (`PlanMemory.fits_nowhere`)."""
        return not self.rejudge


def _rescan(
    ctx: RequestContext, setup: Setup, key: tuple, out: Evaluation, previous: WaitingScan | None
) -> WaitingScan | None:
    """`_scan` of a request with no live filter, from the last one of its demand and plan (`previous`,
    kept under `key`; None when there is none, or it was another plan's): a waiting request is
    scanned again every cycle, on a fleet where most pools keep their capacity object from one cycle
    to the next, and a rejection for capacity with it (it reads the demand and the capacity alone).
    The capacity objects are compared in C (`map`, `compress`), and only the pools whose object
    differs, or whose rejection named a head, are judged. None when some pool fits (`_scan` then
    records the rejections as usual); else the scan, recorded in `out` with the one it was taken
    from and the places judged again."""
    plan = setup.plan
    ordinals = tuple(plan.by_ordinal) if previous is None else previous.ordinals
    overlay = ctx.cycle.overlay
    read = list(map(overlay.by_ordinal.get, ordinals))
    n = len(ordinals)
    by_ordinal = plan.by_ordinal
    for i in compress(range(n), map(is_, read, repeat(None))):  # a deferred change not worked out yet
        read[i] = overlay.capacity(by_ordinal[ordinals[i]][3])
    capacities = cast(list[PoolCapacity], read)  # each None worked out above
    if previous is None:
        todo: Sequence[int] = range(n)
        judged: list = [None] * n
    else:
        changed = compress(range(n), map(is_not, capacities, previous.capacities))
        todo = sorted({*changed, *previous.rejudge}) if previous.rejudge else list(changed)
        judged = list(previous.judged)
    rejudge = []
    for i in todo:
        _, _, cluster, pool, _ = by_ordinal[ordinals[i]]
        rejection = _fit_rejection(ctx, setup, cluster, pool, capacities[i])
        if rejection is None:
            return None
        judged[i] = rejection
        if rejection[1].reason not in CAPACITY_REASONS:
            rejudge.append(i)
    scan = WaitingScan(plan, ordinals, tuple(capacities), tuple(judged), tuple(rejudge))
    out.judged = scan.judged
    if previous is not None:
        out.before, out.rejudged = previous.judged, todo
    ctx.cycle.memory.last_scans[key] = scan
    return scan
