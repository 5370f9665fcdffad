"""The engine's entry: one call decides the whole pending queue, in order, against one view.

`decide(view, queue, reservations, policy, now)` is pure (no I/O, no clock, no randomness): the
same inputs give the same decisions. A request asked alone is a queue of one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Sequence
from dataclasses import dataclass
from datetime import datetime

from airflow_mcsched.decision import explain, reason_tally
from airflow_mcsched.decision.backfill import HeldRoom, hold_for_head
from airflow_mcsched.decision.candidates import Evaluation, evaluate
from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.cycle_state import CycleState
from airflow_mcsched.decision.filters import DEFAULT_FILTERS, Filter
from airflow_mcsched.decision.gc_pause import collector_paused
from airflow_mcsched.decision.outcome import (
    AdmissionResult,
    Outcome,
    PlacementDecision,
    ReclaimedLease,
    Rejection,
    ScoredCandidate,
    Victim,
)
from airflow_mcsched.decision.policy import Policy
from airflow_mcsched.decision.pool_judgement import MAX_REMEMBERED, Setup
from airflow_mcsched.decision.preemption import PreemptionPlan, plan_preemption
from airflow_mcsched.decision.queue_order import admission_order
from airflow_mcsched.decision.reasons import CAPACITY_REASONS, Reason
from airflow_mcsched.decision.request import PlacementRequest
from airflow_mcsched.decision.reservation import Reservation
from airflow_mcsched.decision.score_breakdown import remembered_candidate
from airflow_mcsched.decision.scores import DEFAULT_SCORES, Score
from airflow_mcsched.view.snapshot import GlobalView


@dataclass(frozen=True, slots=True)
class Plugins:
    """The filter pipeline and the scores; swap or extend them without touching the engine."""

    filters: tuple[Filter, ...] = DEFAULT_FILTERS
    scores: tuple[Score, ...] = DEFAULT_SCORES

    @property
    def dollar_scores(self) -> tuple[str, ...]:
        """The scores in dollars (`Score.in_dollars`): those a policy's dollars at stake weigh more."""
        return tuple(s.name for s in self.scores if s.in_dollars)


DEFAULT_PLUGINS = Plugins()

# How close a rejection came to admission: the furthest stage names why the request waits.
_STAGE_WAITING_BEHIND_HEAD = 4
_STAGE_CAPACITY = 3
_STAGE_QUOTA = 2
_STAGE_RESERVED = 1


def _stage(rejection: Rejection) -> int:
    return _stage_of((rejection.reason, rejection.lasting))


def _stage_of(kind: tuple[Reason, bool]) -> int:
    """The stage of a rejection for this reason, lasting or not."""
    reason, lasting = kind
    if lasting:
        return 0
    if reason is Reason.WAITING_BEHIND_HEAD:
        return _STAGE_WAITING_BEHIND_HEAD
    if reason in CAPACITY_REASONS:
        return _STAGE_CAPACITY
    if reason is Reason.QUOTA_EXCEEDED:
        return _STAGE_QUOTA
    return _STAGE_RESERVED if reason is Reason.RESERVED_FOR_PRIORITY else 0


_WAITING_REASON = {
    _STAGE_WAITING_BEHIND_HEAD: Reason.WAITING_BEHIND_HEAD,
    _STAGE_CAPACITY: Reason.WAITING_FOR_CAPACITY,
    _STAGE_QUOTA: Reason.WAITING_FOR_QUOTA,
    _STAGE_RESERVED: Reason.WAITING_FOR_CAPACITY,
    0: Reason.NO_FEASIBLE_CLUSTER,
}


def waiting_reason(rejections: Sequence[Rejection]) -> Reason:
    # staged once per kind of rejection: a waiting request has one for most pools, of a few kinds
    return _WAITING_REASON[max(map(_stage_of, {(r.reason, r.lasting) for r in rejections}), default=0)]


class AdmissionCycle:
    """One pass over the queue; owns the cycle state so each decision sees the ones before it."""

    def __init__(
        self,
        view: GlobalView,
        reservations: Sequence[Reservation],
        policy: Policy,
        now: datetime,
        plugins: Plugins = DEFAULT_PLUGINS,
    ) -> None:
        self.policy = policy
        self.now = now
        self.leases_end = now + policy.lease  # every lease granted in the cycle
        self.plugins = plugins
        active: dict[str, Reservation] = {}  # by id, in the caller's order (running_work.py)
        reclaimed = []
        for r in reservations:
            if r.expires_at <= now:  # Reservation.is_expired, inlined: this loop sees every lease
                reclaimed.append(_reclaim(r, view))
            else:
                active[r.id] = r
        # each reservation once: a second with the same id would hide what the first holds
        lapsed = [x.reservation_id for x in reclaimed]
        if len(active) + len(reclaimed) != len(reservations) or _repeated(lapsed, active):
            _refuse_repeated("reservations", "reservation", [r.id for r in reservations], "pass each running one once")
        self.reclaimed = tuple(reclaimed)
        self.state = CycleState(view, active, policy, now, plugins)
        self.granted: list[Reservation] = []
        self.preemptions: list[Victim] = []

    def run(self, queue: Sequence[PlacementRequest]) -> AdmissionResult:
        shares = self.policy.team_shares

        def use_against_share(team: str) -> float:
            quota = self.state.quota
            return quota.total_used(team) / quota.share(team, shares.get(team, 1.0))

        if len({r.id for r in queue}) != len(queue):
            _refuse_repeated("queue", "request", [r.id for r in queue], "give each pending request an id of its own")
        decisions = tuple(self.decide_one(r) for r in admission_order(queue, self.policy, use_against_share, self.now))
        return AdmissionResult(decisions, tuple(self.granted), self.reclaimed, tuple(self.preemptions))

    def decide_one(self, request: PlacementRequest) -> PlacementDecision:
        priority = self.policy.priority_of(request.priority_class)
        if priority is None:
            return PlacementDecision(
                request.id,
                Outcome.WAITING,
                Reason.UNKNOWN_PRIORITY_CLASS,
                f"Waiting ({Reason.UNKNOWN_PRIORITY_CLASS}): priority class {request.priority_class!r} is not "
                f"in the policy ({sorted(self.policy.priority_classes)}); fix the request or the policy.",
            )
        ctx = RequestContext.of(request, priority, self.state)
        evaluation = evaluate(ctx, self.plugins.filters, self.plugins.scores, want=1 + self.policy.runners_up)
        if evaluation.feasible:
            return self._admit(ctx, evaluation)
        plan = plan_preemption(ctx, evaluation) if self.policy.preemption else None
        if plan is not None:
            return self._preempt(ctx, plan, tuple(evaluation.rejections))
        return self._wait(ctx, evaluation)

    def _admit(self, ctx: RequestContext, evaluation: Evaluation) -> PlacementDecision:
        first, *others = evaluation.feasible
        setup = evaluation.setup
        best = remembered_candidate(ctx, setup, first, with_figures=True)
        runners_up = tuple(remembered_candidate(ctx, setup, f, False) for f in others[: self.policy.runners_up])
        request = ctx.request
        pool = first.pool
        reservation = Reservation(
            id=f"rsv-{request.id}",
            request_id=request.id,
            cluster=best.cluster,
            pool=best.pool,
            pods=best.pods,
            team=request.team,
            priority=ctx.priority,
            interruptible=request.interruptible,
            price_per_gpu_hour=best.price_per_gpu_hour,
            granted_at=self.now,
            expires_at=self.leases_end,
            expected_end=ctx.expected_end,
            gpu_type=pool.gpu_type if ctx.demand.needs_gpu else None,
            priority_class=request.priority_class or self.policy.default_priority_class,
            project=request.project,
            spread_group=request.spread_group,
        )
        self.state.grant(reservation)
        if self.state.head is not None:
            self.state.head.commit(pool, best.pods, ctx.expected_end)
        self.granted.append(reservation)
        return PlacementDecision(
            request.id,
            Outcome.ADMITTED,
            Reason.ADMITTED,
            _summary(setup, pool.ordinal, best, runners_up),
            placement=best,
            runners_up=runners_up,
            rejections=tuple(evaluation.rejections),  # every pool ruled out, lasting or live
            reservation=reservation,
        )

    def _preempt(
        self, ctx: RequestContext, plan: PreemptionPlan, rejections: tuple[Rejection, ...]
    ) -> PlacementDecision:
        victims = tuple(
            Victim(
                reservation_id=v.reservation.id,
                request_id=v.reservation.request_id,
                team=v.reservation.team,
                cluster=v.reservation.cluster,
                pool=v.reservation.pool,
                reason=v.reason,
                message=v.message,
                for_request=ctx.request.id,
            )
            for v in plan.victims
        )
        for r in (*plan.stopping, *(v.reservation for v in plan.victims)):
            self.state.evict(r)
        self.state.hold_for(plan.pool, plan.pods, ctx.request.team, ctx.demand.gpu_equivalent)
        self.preemptions.extend(victims)
        return PlacementDecision(
            ctx.request.id,
            Outcome.PREEMPTING,
            Reason.PREEMPTING,
            explain.preempting(plan),
            rejections=rejections,
            victims=victims,
        )

    def _wait(self, ctx: RequestContext, evaluation: Evaluation) -> PlacementDecision:
        reason, rejections, tally = self._waiting_parts(evaluation)
        expected_start = None
        state = self.state
        held = state.head.heads if state.head is not None else []
        policy = self.policy
        heads = policy.backfill_heads
        if ctx.demand.is_large and policy.waited_for_large_hold(ctx.request.arrival, self.now):
            heads += policy.backfill_large_heads
        if policy.backfill and len(held) < heads and reason is Reason.WAITING_FOR_CAPACITY:
            view = state.view
            blocked = [
                view.pool(r.cluster, r.pool)
                for _, r in evaluation.judged
                if _stage(r) == _STAGE_CAPACITY and r.pool is not None
            ]
            head = hold_for_head(ctx, blocked, held)
            if head is not None:
                state.head = HeldRoom([*held, head])
                expected_start = head.start
        expected_end = None if expected_start is None else expected_start + ctx.duration
        return PlacementDecision(
            ctx.request.id,
            Outcome.WAITING,
            reason,
            explain.waiting(
                reason, ctx.demand, rejections, expected_start, ctx.request.deadline, expected_end, tally=tally
            ),
            rejections=rejections,
            expected_start=expected_start,
        )

    def _waiting_parts(self, evaluation: Evaluation) -> _Parts:
        """Why a request waits, its rejections in fleet order and their tally; worked out once for
        the requests that share one set of rejections (see `candidates.evaluate`), in a cycle and in
        the cycles after it that reach the same capacity state."""
        judged = evaluation.judged
        shared = isinstance(judged, tuple)
        lasting = evaluation.plan.rejections
        remembered = self.state.memory.waiting_parts
        if shared:
            known = remembered.get((id(judged), id(lasting)))
            if known is not None and known[0] is judged and known[1] is lasting:
                return known[2]
        before = evaluation.before
        earlier = None if before is None else remembered.get((id(before), id(lasting)))
        if earlier is not None and earlier[0] is before and earlier[1] is lasting:
            parts, counts = _parts_again(evaluation, earlier[2], earlier[3])
        else:
            # lasting rejections never say more than "no feasible", so the reason reads the live ones
            counts = reason_tally.count_reasons(judged)
            tally = reason_tally.tally(evaluation.setup.lasting_counts(), counts)
            parts = (waiting_reason([r for _, r in judged]), evaluation.rejections, tally)
        if shared:
            # by both: plans of no eligible pool share one empty `judged`; held, so the ids stay theirs
            remembered[(id(judged), id(lasting))] = (judged, lasting, parts, counts)
        return parts


_Parts = tuple[Reason, tuple[Rejection, ...], str]
"""A waiting request's reason, rejections in fleet order and tally (`_waiting_parts`)."""


def _parts_again(
    evaluation: Evaluation, earlier: _Parts, counts: reason_tally.ReasonCounts
) -> tuple[_Parts, reason_tally.ReasonCounts]:
    """`_waiting_parts` of a scan taken again (`Evaluation.before`), with its judged rejections'
    counts, from those of the one before (`counts` are its): its rejections with the pools judged
    again put in their places; the same reason and tally while every such pool is rejected for the
    reason it was before (they read the reasons alone), else the counts moved from the old reasons
    to the new ones (`reason_tally.recounted`).

    A waiting request is scanned again every cycle, and only the pools whose capacity changed are
    judged; merging and counting a few hundred rejections anew for each scan was most of the cost of
    wording its decision."""
    reason, rejections, tally = earlier
    before, judged = evaluation.before, evaluation.judged
    assert before is not None, "only a scan taken again has one before"
    places = evaluation.plan.waiting_places()
    merged = list(rejections)
    moved = []
    for i in evaluation.rejudged:
        position, rejection = judged[i]
        merged[places[position]] = rejection
        was = before[i][1].reason
        if rejection.reason is not was:
            moved.append((position, was, rejection.reason))
    if not moved:
        return (reason, tuple(merged), tally), counts
    counts = reason_tally.recounted(counts, moved) or reason_tally.count_reasons(judged)
    tally = reason_tally.tally(evaluation.setup.lasting_counts(), counts)
    return (waiting_reason([r for _, r in judged]), tuple(merged), tally), counts


def _summary(setup: Setup, ordinal: int, best: ScoredCandidate, runners_up: tuple[ScoredCandidate, ...]) -> str:
    """The admitted summary, written once per best pool and runners-up (remembered candidates recur)."""
    key = (id(best), *map(id, runners_up))
    known = setup.summaries.get(key)
    if known is not None:  # the entry holds the candidates, so their ids are still theirs
        return known[1]
    text = explain.admitted(best, runners_up, _parts_text(setup, ordinal, best))
    if len(setup.summaries) >= MAX_REMEMBERED:
        setup.summaries.clear()
    setup.summaries[key] = ((best, runners_up), text)
    return text


def _parts_text(setup: Setup, ordinal: int, best: ScoredCandidate) -> str:
    """`explain.score_parts` of the best candidate, its static parts' words kept per pool: they come
    first, and are the same for every request of the setup (score_breakdown.py), while a grant in
    the pool changes the dynamic ones, so most summaries are written anew for a pool seen before."""
    n = len(setup.plan.static_scores)
    static = setup.static_texts.get(ordinal)
    if static is None:
        static = setup.static_texts[ordinal] = explain.score_parts(best.parts[:n])
    dynamic = explain.score_parts(best.parts[n:])
    return f"{static}, {dynamic}" if static and dynamic else static or dynamic


def _repeated(ids: list[str], also: Container[str]) -> bool:
    """Some id is twice in `ids`, or also in `also`."""
    return len(set(ids)) != len(ids) or any(i in also for i in ids)


def _refuse_repeated(field: str, what: str, ids: list[str], fix: str) -> None:
    """Raise for the ids that `ids` holds more than once: a grant is named after its request, and the
    running work is indexed by id, so a second one with an id would be lost or hide the first."""
    repeated = sorted(i for i, n in Counter(ids).items() if n > 1)
    shown = ", ".join(map(repr, repeated[:5])) + (f" and {len(repeated) - 5} more" if len(repeated) > 5 else "")
    said = f"{what} id {shown} appears" if len(repeated) == 1 else f"{what} ids {shown} appear"
    raise ValueError(f"{field}: {said} more than once; {fix}")


def _reclaim(r: Reservation, view: GlobalView) -> ReclaimedLease:
    if r.pod_visible(view):
        message = f"lease ended at {r.expires_at.isoformat()}; its pod still runs and holds what it uses"
    elif r.pod_alive(view):  # but not yet on a node
        message = (
            f"lease ended at {r.expires_at.isoformat()} while its pod waited for a node; "
            "the capacity is free again, and the pod holds what it uses once the cluster binds it"
        )
    else:
        message = f"lease ended at {r.expires_at.isoformat()} before its pod appeared; capacity is free again"
    return ReclaimedLease(r.id, r.request_id, r.cluster, r.pool, Reason.LEASE_EXPIRED, message)


def decide(
    view: GlobalView,
    queue: Sequence[PlacementRequest],
    reservations: Sequence[Reservation],
    policy: Policy,
    now: datetime,
    *,
    plugins: Plugins = DEFAULT_PLUGINS,
) -> AdmissionResult:
    """Decide every pending request, in admission order, against the view and the running reservations.

    Expired leases are reclaimed first (and reported); active reservations whose pods the view does
    not show yet are taken from its free capacity. Each request is then admitted (a new
    reservation), preempting (victims named), or waiting (each cluster's or pool's reason).
    """
    with collector_paused():  # see gc_pause.py: a cycle's objects all live until it returns
        return AdmissionCycle(view, reservations, policy, now, plugins).run(queue)
