"""Preempt lower-priority interruptible work, or take back borrowed quota, only when it makes a request fit.

Victims are chosen per candidate pool: the fewest first, then the cheapest (lowest cost per hour),
then lower priority and newer grants. A single pod is placed node by node (victims elsewhere do not
help it); gangs and quota reclaims search small sets exhaustively and otherwise greedily: evict
cheapest-first, then spare every victim it can (as the Kubernetes scheduler does).
"""

from __future__ import annotations

from bisect import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import combinations
from math import comb

from airflow_mcsched.decision.backfill import HeldRoom
from airflow_mcsched.decision.candidates import Evaluation
from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.cycle_state import CycleState
from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.decision.node_choice import choose_nodes
from airflow_mcsched.decision.outcome import Rejection
from airflow_mcsched.decision.plan_cache import MAX_FIT_MEMOS, MAX_VICTIM_CONTENTS
from airflow_mcsched.decision.reasons import CAPACITY_REASONS, Reason
from airflow_mcsched.decision.reservation import Reservation
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.bounded_table import held, kept_for
from airflow_mcsched.view.frozen_init import quick_init
from airflow_mcsched.view.node_capacity import NodeCapacity
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import PoolKey, PoolView

MAX_EXHAUSTIVE_VICTIMS = 4
MAX_FIT_CHECKS = 200
MAX_FRUITLESS_POOLS = 4096
"""Pools a demand and priority's fruitless searches are kept for (fleet positions: at most the fleet's pools)."""
PREEMPTABLE = CAPACITY_REASONS | {Reason.QUOTA_EXCEEDED}


@quick_init
@dataclass(frozen=True, slots=True)
class VictimChoice:
    """Running work that a plan would stop, and why. The search leaves `message` empty (it tries far
    more candidates than it keeps); `plan_preemption` says it for the plan it returns."""

    reservation: Reservation
    reason: Reason
    message: str = ""


@quick_init
@dataclass(frozen=True, slots=True)
class PreemptionPlan:
    """Stop `victims` (and wait for `stopping`, victims chosen earlier) so the request fits `pods` on `pool`."""

    pool: PoolView
    pods: tuple[NodeAllocation, ...]
    victims: tuple[VictimChoice, ...]
    stopping: tuple[Reservation, ...]

    @property
    def cost_per_hour(self) -> float:
        return sum(v.reservation.cost_per_hour for v in self.victims)

    def rank(self) -> tuple[int, float, int]:
        return (len(self.victims), self.cost_per_hour, self.pool.ordinal)


def _victim(ctx: RequestContext, r: Reservation, reason: Reason, pool: PoolView) -> VictimChoice:
    """Running work `r` as a victim for the request, with the reason said in its words."""
    request = ctx.request
    if reason is Reason.RECLAIMED_BY_LENDER:
        message = f"team {r.team} borrows {pool.gpu_type} quota that team {request.team} needs back for {request.id}"
    else:
        message = (
            f"priority {r.priority} is below {ctx.priority} of {request.id} "
            f"({request.priority_class or ctx.cycle.policy.default_priority_class})"
        )
    return VictimChoice(r, reason, message)


def _victim_order(r: Reservation) -> tuple[float, int, float, str]:
    """Cheapest first, then lower priority, then the newest grant (least work lost)."""
    return (r.cost_per_hour, r.priority, -r.granted_at.timestamp(), r.id)


def _choice_order(v: VictimChoice) -> tuple[float, int, float, str]:
    return _victim_order(v.reservation)


def _victim_choice(
    ctx: RequestContext, r: Reservation, gpu_type: str | None, lent: str | None, teams: frozenset[str]
) -> VictimChoice | None:
    """Whether a search for a team short of quota, on a pool of `gpu_type`, may stop `r`, and why:
    to take back quota of `lent` that `r`'s team borrowed from the request's (`teams`: the team and
    its cohort), or for priority."""
    cycle = ctx.cycle
    if r.id in cycle.granted_ids or not r.interruptible or r.preempted_by is not None:
        return None
    quota = cycle.quota
    borrower = r.team != ctx.request.team and r.team in teams and r.gpu_type == gpu_type
    if lent is not None and borrower and quota.borrowed(r.team, lent) > 0:
        return VictimChoice(r, Reason.RECLAIMED_BY_LENDER)
    if r.priority < ctx.priority:
        return VictimChoice(r, Reason.PREEMPTED_BY_PRIORITY)
    return None


class CohortVictims:
    """The work of a team short of quota and of its cohort on GPUs of one type, anywhere, that its
    searches may stop, in victim order (`orders`: each one's `_victim_order`), and those teams."""

    __slots__ = ("_quota_ok", "choices", "orders", "teams")

    def __init__(self, keyed: list[tuple[tuple, VictimChoice]], teams: frozenset[str]) -> None:
        self.orders = [order for order, _ in keyed]
        self.choices = [choice for _, choice in keyed]
        self.teams = teams
        self._quota_ok: dict[float, bool] = {}

    def quota_ok_once_stopped(self, ctx: RequestContext, gpu_type: str, amount: float) -> bool:
        """Whether the team could take `amount` GPUs of `gpu_type` once all of these had stopped. The
        quota reads only the team's and its cohort's use, so where it could not, no search of a pool
        of the type finds a plan (it stops no other work of theirs), and none is made."""
        ok = self._quota_ok.get(amount)
        if ok is None:
            gone = [c.reservation for c in self.choices]
            ok = self._quota_ok[amount] = ctx.cycle.quota.check_without(ctx.request.team, gpu_type, amount, gone).ok
        return ok


def _cohort_victims(ctx: RequestContext, gpu_type: str | None, lent: str | None) -> CohortVictims:
    """`CohortVictims` of the request's team and this GPU type: the same for every pool of the type it
    searches. Kept for the cycle while the running work is unchanged (its log names no change) and
    the cohort's teams borrow as they did: each of a few hundred waiting requests searched forty
    pools or more, and went over the cohort's work of the type (a hundred reservations or more) and
    sorted it for each pool."""
    cycle, team = ctx.cycle, ctx.request.team
    quota = cycle.quota
    cohort = quota.cohort_of(team)
    borrowing = () if lent is None else tuple(quota.borrowed(t, lent) > 0 for t in cohort)
    key = (team, gpu_type, ctx.priority, lent)
    known = cycle.cohort_victims.get(key)
    if known is not None and known[0] == len(cycle.running.log) and known[1] == borrowing:
        return known[2]
    teams = frozenset((*cohort, team))
    keyed = sorted(
        (_victim_order(r), choice)
        for r in cycle.running.of_teams(teams, gpu_type)
        if (choice := _victim_choice(ctx, r, gpu_type, lent, teams)) is not None
    )
    found = CohortVictims(keyed, teams)
    cycle.cohort_victims[key] = (len(cycle.running.log), borrowing, found)
    return found


class _Below:
    """A pool's candidate victims at one priority (`_below_in_pool`), and what single-pod searches
    derive from them alone, worked out on first need: neither reads the request beyond its priority."""

    __slots__ = ("_by_node", "_most_whole", "_pool", "content", "eligible")

    def __init__(self, pool: PoolKey, eligible: list[VictimChoice], content: tuple) -> None:
        self._pool = pool
        self.eligible = eligible
        self.content = content
        """What a search reads of the victims, one object per content while the pool's work is
        unchanged, whatever the cycle (`PlanMemory.victims_alike`): fruitless searches are kept with it."""
        self._by_node: dict[str, tuple[list[VictimChoice], list[VictimChoice]]] | None = None
        self._most_whole: tuple[PoolCapacity, int] | None = None

    def by_node(self) -> dict[str, tuple[list[VictimChoice], list[VictimChoice]]]:
        """Per node of the pool, the victims with pods there: in victim order, and largest first
        (`_fewest_then_cheapest`)."""
        if self._by_node is None:
            on_node: dict[str, list[VictimChoice]] = {}
            for v in self.eligible:
                for name in v.reservation.nodes:
                    on_node.setdefault(name, []).append(v)
            self._by_node = {name: (victims, sorted(victims, key=_size_order)) for name, victims in on_node.items()}
        return self._by_node

    def most_whole_gpus(self, capacity: PoolCapacity) -> int:
        """At most how many whole GPUs the best node of the pool has free once every victim has stopped."""
        known = self._most_whole
        if known is not None and known[0] is capacity:
            return known[1]
        best = _most_whole_gpus(capacity, (v.reservation for v in self.eligible), self._pool)
        self._most_whole = (capacity, best)
        return best


def _most_whole_gpus(capacity: PoolCapacity, stopped: Iterable[Reservation], pool: PoolKey) -> int:
    """At most how many whole GPUs the best node of the pool (`pool` its key) has free once the
    `stopped` work's pods in it are gone (`_whole_gpus_gained`)."""
    best = capacity.largest_whole_free_on_node
    for name, gpus in _whole_gpus_gained(stopped, pool).items():
        node = capacity.node(name)
        if node is not None:
            best = max(best, min(len(node.gpu_milli_free), node.whole_gpus_free + gpus))
    return best


def _whole_gpus_gained(stopped: Iterable[Reservation], pool: PoolKey) -> dict[str, int]:
    """By node of the pool (`pool` its key), at most how many whole GPUs the `stopped` work's pods
    there leave free: their whole GPUs, and for a share the GPU it may leave whole."""
    gained: dict[str, int] = {}
    for r in stopped:
        if r.key == pool:
            for a in r.pods:
                gained[a.node] = gained.get(a.node, 0) + a.gpus + (1 if a.gpu_milli else 0)
    return gained


def _gpu_slots_once_stopped(capacity: PoolCapacity, stopped: Iterable[Reservation], pool: PoolKey, gpus: int) -> int:
    """At most how many pods of `gpus` whole GPUs each the pool (`pool` its key) holds once the
    `stopped` work's pods in it are gone: by each node's free whole GPUs and those its stopped pods
    hold, a share counted as the GPU it may leave whole (CPU and memory only lower it)."""
    gained = _whole_gpus_gained(stopped, pool)
    slots = 0
    for node in capacity.nodes:
        whole = node.whole_gpus_free
        if node.name in gained:
            whole = min(len(node.gpu_milli_free), whole + gained[node.name])
        slots += whole // gpus
    return slots


def _size_order(v: VictimChoice) -> tuple:
    """Largest first, then in victim order: the fewest victims that free a node enough."""
    return (-v.reservation.gpu_equivalent, _victim_order(v.reservation))


def _below_in_pool(ctx: RequestContext, pool: PoolView) -> _Below:
    """The pool's running interruptible work of lower priority than the request's, not granted this
    cycle nor already stopping, in victim order: shared by the cycle's searches at that priority
    while the pool's work is unchanged (a search only reads it). A search of a pool with many
    running reservations went over all of them, and sorted those below, for every request.

    Found for work the cycle has not changed yet, it is kept for later cycles that find the same work
    in the pool (`PlanMemory.below`): on a full fleet most pools' work is the same from one cycle to
    the next, and going over it again was a tenth of a cycle. What the cycle changed is not kept: it
    would give the same victims (work granted in the cycle went to a request decided earlier, so of a
    priority no lower than this one's, and work stopping is marked so), but its work tuples are the
    cycle's own and seldom recur, so keeping them would only push out entries that do. No decision
    tells the two apart; `tests/decision/test_preemption.py` checks what is kept."""
    cycle, priority = ctx.cycle, ctx.priority
    key = (pool.key, priority)
    version = cycle.running.pool_version(pool.key)
    known = cycle.victims_below.get(key)
    if known is not None and known[0] == version:
        return known[1]
    work = cycle.running.work_in(pool.key)
    if version == 0:  # nothing granted nor stopped in the pool yet: holds in a cycle with this work
        below = kept_for(cycle.memory.below, key, work, MAX_VICTIM_CONTENTS, partial(_found_below, ctx, pool.key))
    else:
        below = _found_below(ctx, pool.key, work)
    cycle.victims_below[key] = (version, below)
    return below


def _found_below(ctx: RequestContext, pool: PoolKey, work: tuple[Reservation, ...]) -> _Below:
    cycle, priority = ctx.cycle, ctx.priority
    granted = cycle.granted_ids
    ordered = [
        (_victim_order(r), r)  # orders never tie: they end with the reservation's id
        for r in work
        if r.interruptible and r.priority < priority and r.preempted_by is None and r.id not in granted
    ]
    ordered.sort()
    eligible = [VictimChoice(r, Reason.PREEMPTED_BY_PRIORITY) for _, r in ordered]
    # all a search reads of them, their order (cost, priority, grant time, id) and pods: not the
    # lease, which the service renews every cycle
    content = tuple([(*order, r.pods) for order, r in ordered])
    return _Below(pool, eligible, cycle.memory.victims_alike((pool, priority), content))


class _PoolSearch:
    """Victim search on one pool: which sets of running work, once stopped, let the request fit."""

    def __init__(self, ctx: RequestContext, pool: PoolView, below: _Below | None = None) -> None:
        """`below`: the pool's `_below_in_pool`, when the caller has it already."""
        self.ctx = ctx
        self.pool = pool
        self.checks = 0
        self.refused = False
        """Whether a backfill head refused a fit: a fruitless search is then not kept across cycles."""
        cycle, request = ctx.cycle, ctx.request
        quota = cycle.quota
        amount = ctx.demand.gpu_equivalent
        self.quota_short = not quota.check(request.team, pool.gpu_type, amount).ok
        self.stopping: tuple[Reservation, ...] = ()
        if cycle.running.stopping_for(request.id):
            self.stopping = tuple(r for r in cycle.running.values() if r.preempted_by == request.id)
        self.below: _Below | None = None  # the pool's work below the request, when that is all it may stop
        if not self.quota_short:
            self.below = below or _below_in_pool(ctx, pool)
            self.eligible = self.below.eligible
            return
        gpu_type = pool.gpu_type
        # the GPU type whose quota the team lends to its cohort and may take back, if any
        lent = (
            gpu_type
            if cycle.policy.reclaim_borrowed_quota
            and gpu_type is not None
            and quota.limits(request.team)
            and quota.within_nominal(request.team, gpu_type, amount)
            else None
        )
        # work of the team and its cohort anywhere, as well as the pool's, may give back quota
        cohort = _cohort_victims(ctx, gpu_type, lent)
        teams = cohort.teams
        if (
            gpu_type is not None
            and not self.stopping
            and not cohort.quota_ok_once_stopped(ctx, gpu_type, amount)
            and not any(r.team in teams and r.gpu_type != gpu_type for r in cycle.running_in(pool.key))
        ):
            self.eligible = []  # stopping all the work it may stop here leaves the team short
            return
        own = [
            (_victim_order(r), choice)
            for r in cycle.running_in(pool.key)
            if not (r.team in teams and r.gpu_type == gpu_type)  # the cohort's work of the type is in already
            and (choice := _victim_choice(ctx, r, gpu_type, lent, teams)) is not None
        ]
        orders, choices = cohort.orders, cohort.choices
        if own:
            orders, choices = list(orders), list(choices)
            for order, choice in own:
                at = bisect(orders, order)
                orders.insert(at, order)
                choices.insert(at, choice)
        self.eligible = list(choices)

    def fits(self, victims: Sequence[VictimChoice]) -> tuple[NodeAllocation, ...] | None:
        """The request's pods if it fits once `victims` (and work already stopping for it) are gone."""
        self.checks += 1
        cycle, ctx = self.ctx.cycle, self.ctx
        gone = [*self.stopping, *(v.reservation for v in victims)]
        capacity = cycle.overlay.capacity(self.pool).give_back(
            a for r in gone if r.key == self.pool.key for a in r.pods
        )
        pods = choose_nodes(capacity, ctx.demand)
        if pods is None:
            return None
        if cycle.head is not None and not cycle.head.allows(self.pool, pods, ctx.expected_end):
            self.refused = True
            return None
        if (
            self.quota_short
            and not cycle.quota.check_without(ctx.request.team, self.pool.gpu_type, ctx.demand.gpu_equivalent, gone).ok
        ):
            return None
        return pods

    def _might_fit_without_all(self) -> bool:
        """Cheap necessary test before building capacity: can the freed GPUs make one node big enough
        (for a gang: hold every pod)?"""
        demand = self.ctx.demand
        if self.quota_short or not demand.gpus:
            return True
        capacity = self.ctx.cycle.overlay.capacity(self.pool)
        if demand.pods > 1:
            stopped = (*self.stopping, *(v.reservation for v in self.eligible))
            return _gpu_slots_once_stopped(capacity, stopped, self.pool.key, demand.gpus) >= demand.pods
        if self.below is not None and not self.stopping:  # the same for every search at the priority
            return self.below.most_whole_gpus(capacity) >= demand.gpus
        stopped = (*self.stopping, *(v.reservation for v in self.eligible))
        return _most_whole_gpus(capacity, stopped, self.pool.key) >= demand.gpus

    def plan(self) -> PreemptionPlan | None:
        if not self._might_fit_without_all():
            return None
        if self.stopping:
            pods = self.fits(())
            if pods is not None:
                return PreemptionPlan(self.pool, pods, (), self.stopping)
        if not self.eligible:
            return None
        if self.ctx.demand.pods == 1 and not self.quota_short:
            return self._one_node()
        if self.fits(self.eligible) is None:
            return None
        for k in range(1, min(MAX_EXHAUSTIVE_VICTIMS, len(self.eligible)) + 1):
            if comb(len(self.eligible), k) > MAX_FIT_CHECKS - self.checks:
                return self._greedy()
            best = None
            for combo in combinations(self.eligible, k):
                pods = self.fits(combo)
                if pods is not None:
                    cost = sum(v.reservation.cost_per_hour for v in combo)
                    if best is None or cost < best[0]:
                        best = (cost, combo, pods)
            if best is not None:
                return PreemptionPlan(self.pool, best[2], best[1], self.stopping)
        return self._greedy()

    def _one_node(self) -> PreemptionPlan | None:
        """A single pod lands on one node, so victims are sought node by node: on each, the fewest
        (largest first), then the cheapest set of that size; the best node's set wins."""
        demand = self.ctx.demand
        capacity = self.ctx.cycle.overlay.capacity(self.pool)
        assert self.below is not None, "a single pod short of no quota stops the pool's work below it"
        options = []
        for name, (victims, by_size) in self.below.by_node().items():
            node = capacity.node(name)
            if node is None:
                continue
            chosen = _fewest_then_cheapest(node, victims, by_size, demand)
            if chosen is not None:
                cost = sum(v.reservation.cost_per_hour for v in chosen)
                options.append((len(chosen), cost, capacity.node_index[name], chosen))
        for _, _, _, chosen in sorted(options, key=lambda o: o[:3]):
            pods = self.fits(chosen)  # the exact check: whole pool, backfill head
            if pods is not None:
                return PreemptionPlan(self.pool, pods, tuple(chosen), self.stopping)
        return None

    def _greedy(self) -> PreemptionPlan | None:
        chosen: list[VictimChoice] = []
        for v in self.eligible:
            chosen.append(v)
            if self.fits(chosen) is not None:
                break
        for v in sorted(chosen, key=lambda v: -v.reservation.cost_per_hour):
            trial = [c for c in chosen if c is not v]
            if self.fits(trial) is not None:
                chosen = trial
        pods = self.fits(chosen)
        return None if pods is None else PreemptionPlan(self.pool, pods, tuple(chosen), self.stopping)


def _frees_enough(node: NodeCapacity, victims: Sequence[VictimChoice], demand: Demand) -> bool:
    """Would the pod fit on `node` once these victims' pods there are gone (sums; where a share is
    asked or stopped, the node given them back)."""
    gpus = cpu = mem = 0
    shared = False
    pods = [a for v in victims for a in v.reservation.pods if a.node == node.name]
    for a in pods:
        gpus += a.gpus
        cpu += a.cpu_milli
        mem += a.memory_mib
        shared = shared or bool(a.gpu_milli)
    if node.cpu_milli_free + cpu < demand.cpu_milli or node.memory_mib_free + mem < demand.memory_mib:
        return False
    if demand.gpu_milli or shared:
        return _gpus_fit(node.give_back_all(pods), demand)
    return node.whole_gpus_free + gpus >= demand.gpus


def _gpus_fit(node: NodeCapacity, demand: Demand) -> bool:
    """The pod's GPUs fit on `node`: the share it asks, or its whole GPUs (a GPU is whole once every
    share on it is gone)."""
    if demand.gpu_milli:
        return node.largest_share_free >= demand.gpu_milli
    return node.whole_gpus_free >= demand.gpus


def _fewest_then_cheapest(
    node: NodeCapacity, victims: list[VictimChoice], by_size: list[VictimChoice], demand: Demand
) -> list[VictimChoice] | None:
    """Largest first (`by_size`: `victims` in `_size_order`) gives the fewest victims (exact for
    GPUs); then the cheapest set of that size."""
    k = _fewest_largest_first(node, by_size, demand)
    if k is None:
        return None
    if comb(len(victims), k) > MAX_FIT_CHECKS:
        return by_size[:k]
    fitting = [c for c in combinations(victims, k) if _frees_enough(node, c, demand)]
    return list(
        min(fitting, key=lambda c: (sum(v.reservation.cost_per_hour for v in c), [v.reservation.id for v in c]))
    )


def _fewest_largest_first(node: NodeCapacity, by_size: list[VictimChoice], demand: Demand) -> int | None:
    """The smallest k for which `_frees_enough(node, by_size[:k], demand)`, or None: the sums (and,
    once a share is asked or stopped, the node given back the pods so far) carried from one k to
    the next. Each pod is given back once, in order, as `give_back_all` of them all would (it gives
    back each in turn), so a search over many shares stays linear in its victims."""
    gpus = cpu = mem = 0
    name = node.name
    back = node  # the node given back the pods before `pending`
    pending: list[NodeAllocation] = []  # pods so far not given back to `back` yet
    shared = bool(demand.gpu_milli)
    for k, v in enumerate(by_size, start=1):
        for a in v.reservation.pods:
            if a.node == name:
                gpus += a.gpus
                cpu += a.cpu_milli
                mem += a.memory_mib
                pending.append(a)
                shared = shared or bool(a.gpu_milli)
        if node.cpu_milli_free + cpu < demand.cpu_milli or node.memory_mib_free + mem < demand.memory_mib:
            continue
        if shared:
            back, pending = back.give_back_all(pending), []
            if _gpus_fit(back, demand):
                return k
        elif node.whole_gpus_free + gpus >= demand.gpus:
            return k
    return None


def _quota_reclaim_possible(ctx: RequestContext) -> bool:
    team = ctx.request.team
    cycle = ctx.cycle
    return (
        cycle.policy.reclaim_borrowed_quota and team in cycle.teams_with_quota and len(cycle.quota.cohort_of(team)) > 1
    )


def _worth_searching(ctx: RequestContext) -> bool:
    """Cheap test before any search: is there work this request could stop, or stopping for it?"""
    running = ctx.cycle.running
    if running.lowest_interruptible_priority(None) < ctx.priority or running.stopping_for(ctx.request.id):
        return True
    return _quota_reclaim_possible(ctx)


def plan_preemption(ctx: RequestContext, evaluation: Evaluation) -> PreemptionPlan | None:
    """The best plan over pools rejected only for capacity or quota, or None when stopping work would not help."""
    if not _worth_searching(ctx):
        return None
    cycle = ctx.cycle
    quota_may_help = _quota_reclaim_possible(ctx)
    stopping = cycle.running.stopping_for(ctx.request.id)
    memo = _search_memo(ctx, quota_may_help or bool(stopping))
    pools = _preemptable_pools(ctx, evaluation)
    if memo is None:
        best = _best_plan(ctx, pools, None, stopping or quota_may_help)
    else:
        best = _remembered_best(ctx, pools, memo)
    if best is None:
        return None
    # the search chose whom to stop (perhaps for an earlier request alike); say why, for this one
    victims = tuple(_victim(ctx, v.reservation, v.reason, best.pool) for v in best.victims)
    return PreemptionPlan(best.pool, best.pods, victims, best.stopping)


def _preemptable_pools(ctx: RequestContext, evaluation: Evaluation) -> list[PoolView]:
    """The pools the evaluation's walk rules out for want of capacity or quota alone (a whole cluster
    ruled out, pool None, never is), in its order. Kept in the view's memory with a walk that
    requests share (a tuple: `candidates.evaluate`), which the same requests take again in later
    cycles: on a full fleet each waiting request went over a hundred rejections or more to find
    them, every cycle. The pools may be another view's of the same layout, as a plan's are (the
    overlay finds a pool's capacity by its key)."""
    judged = evaluation.judged
    if isinstance(judged, tuple):
        return held(ctx.cycle.memory.preemptable, judged, MAX_FIT_MEMOS, partial(_ruled_out_again, ctx, evaluation))
    return _ruled_out_for_room(ctx, judged)


def _ruled_out_again(
    ctx: RequestContext, evaluation: Evaluation, judged: Sequence[tuple[int, Rejection]]
) -> list[PoolView]:
    """`_ruled_out_for_room` of a scan taken again (`Evaluation.before`): the pools of the one before
    while each pool judged again is ruled out for room, or not, as it was (a waiting request is
    scanned again every cycle, and only some pools are judged again)."""
    before = evaluation.before
    if before is not None:
        known = ctx.cycle.memory.preemptable.get(id(before))
        if (
            known is not None
            and known[0] is before
            and all(
                (judged[i][1].reason in PREEMPTABLE) is (before[i][1].reason in PREEMPTABLE)
                for i in evaluation.rejudged
            )
        ):
            return known[1]
    return _ruled_out_for_room(ctx, judged)


def _ruled_out_for_room(ctx: RequestContext, judged: Sequence[tuple[int, Rejection]]) -> list[PoolView]:
    by_key = ctx.cycle.view.pools_by_key
    return [
        by_key[(r.cluster, r.pool)]
        for _, r in judged
        if not r.lasting and r.reason in PREEMPTABLE and r.pool is not None
    ]


_WholeSearch = tuple[list[PoolView], PreemptionPlan | None, HeldRoom | None, int, int, int, frozenset[int] | None]
"""The last whole search (`_best_plan`) over one list of pools: the list (held: found by its
identity), its answer, the backfill heads and their commits then, where the cycle's logs of changed
capacity and running work stood then, and the pools' fleet positions once a check needed them
(`_still_holds`). A tuple: on a full fleet most lists are searched once in a cycle."""


class SearchMemo:
    """The searches of requests alike (`_search_memo`): each pool's, with what it read, and each whole
    search, by the list of pools it went over (`_remembered_best`); and, kept across cycles, the
    pools where such a search found nothing to stop (`_fruitless_or_searched`)."""

    __slots__ = ("by_pool", "fruitless", "whole")

    def __init__(self, fruitless: dict[int, tuple]) -> None:
        self.by_pool: dict[int, tuple] = {}
        self.whole: dict[int, _WholeSearch] = {}
        self.fruitless = fruitless


def _still_holds(known: _WholeSearch, cycle: CycleState) -> _WholeSearch | None:
    """`known` as it stands now, when its answer still holds: neither log names one of its pools
    since, and, when it found a plan, the backfill heads are the same (a plan may start where a newer
    head, or a head's commit, refuses). None when it may not hold."""
    pools, best, head, commits, read_at, ran_at, ordinals = known
    if best is not None and (head is not cycle.head or commits != _head_commits(cycle.head)):
        return None
    read, ran = cycle.overlay.log, cycle.running.log
    if len(read) == read_at and len(ran) == ran_at:
        return known
    if len(read) - read_at + len(ran) - ran_at > 8 * len(pools):
        return None  # many changes since: look-ups in a set would cost about what the search does
    if ordinals is None:
        ordinals = frozenset([p.ordinal for p in pools])
    if not ordinals.isdisjoint(read[read_at:]):
        return None
    if len(ran) > ran_at:
        by_key = cycle.view.pools_by_key  # work changed in a pool the view lacks is in none of these
        if not ordinals.isdisjoint([p.ordinal for k in ran[ran_at:] if (p := by_key.get(k)) is not None]):
            return None
    return (pools, best, head, commits, len(read), len(ran), ordinals)


def _search_memo(ctx: RequestContext, own: bool) -> SearchMemo | None:
    """The searches remembered for requests alike in what a search reads, or None when this
    request's search is its own (`own`: its quota may be reclaimed, or work is stopping for it).

    A search reads the demand, the priority (which work is below it), the expected end (the backfill
    heads' check) and, for a team with a quota, the team and its use; so a team with a quota searches
    afresh. Beyond those, it reads the pools' capacity, their running work and the backfill heads,
    which `_remembered_best` and `_best_plan` compare."""
    if own or ctx.request.team in ctx.cycle.teams_with_quota:
        return None
    cycle = ctx.cycle
    key = (ctx.demand, ctx.priority, ctx.duration)
    memo = cycle.pool_searches.get(key)
    if memo is None:
        memo = cycle.pool_searches[key] = SearchMemo(cycle.memory.fruitless_searches(key[:2]))
    return memo


def _remembered_best(ctx: RequestContext, pools: list[PoolView], memo: SearchMemo) -> PreemptionPlan | None:
    """`_best_plan` over `pools`, the answer of an earlier request alike over the same list of pools
    when nothing it read changed since: no capacity or running work of those pools (the cycle's logs
    name none of them) and, when it found a plan, no backfill head. On a full fleet, requests alike
    wait all over the queue with the same few lists of pools to search (those their shared walks rule
    out for room), and each went over every pool's remembered search (fifty pools or more) to find
    what one before had found, while the few grants between them changed other pools."""
    cycle = ctx.cycle
    known = memo.whole.get(id(pools))
    ordinals = None
    if known is not None and known[0] is pools:
        now = _still_holds(known, cycle)
        if now is not None:
            if now is not known:
                memo.whole[id(pools)] = now
            return now[1]
        ordinals = known[6]
    best = _best_plan(ctx, pools, memo, False)
    head = cycle.head
    memo.whole[id(pools)] = (
        pools,
        best,
        head,
        _head_commits(head),
        len(cycle.overlay.log),
        len(cycle.running.log),
        ordinals,
    )
    return best


def _head_commits(head: HeldRoom | None) -> int:
    return 0 if head is None else head.commits


def _best_plan(
    ctx: RequestContext, pools: list[PoolView], memo: SearchMemo | None, every_pool: bool
) -> PreemptionPlan | None:
    """The best of the pools' plans (`_PoolSearch(ctx, pool).plan()`); without `every_pool`, only
    pools with running interruptible work of lower priority (not yet stopping) are searched
    (stopping work, or reclaiming quota, may help elsewhere too). With `memo`, each pool's search is
    taken from an earlier request's where it still holds.

    "Nothing to stop here" holds while the pool's capacity and running work are unchanged: the heads
    held since, and their commits, only refuse more. A plan found holds while the heads are also the
    same (it may start where a newer head refuses).
    Several requests alike that each preempt look at the same pools: without this, each searched
    every pool again, where only the one the last of them preempted in had changed. And each waiting
    request of a full fleet goes over a hundred pools or more, most of them remembered: the checks
    are one loop, without a call per pool.

    With `memo` (no work stopping for the request), a pool whose best conceivable plan
    (`_least_rank`) ranks after the best found so far is not searched: the best plan is the same,
    whatever the order of the pools. A request that preempts finds a plan in most pools it searches,
    and searched them all (on the benchmark's full fleet, 780 searches a cycle for 8 preemptions,
    749 of them in pools that could not win)."""
    cycle = ctx.cycle
    overlay, running, priority = cycle.overlay, cycle.running, ctx.priority
    capacities, lowest, known_lowest = overlay.by_ordinal, running.lowest_interruptible_priority, running.known_lowest
    versions = running.pool_versions
    head = cycle.head
    commits = _head_commits(head)
    best: PreemptionPlan | None = None
    for pool in pools:  # a hundred pools or more for each waiting request of a full fleet: no call per pool
        key = pool.key
        if not every_pool:
            low = known_lowest.get(key)
            if (lowest(key) if low is None else low) >= priority:  # no lower interruptible work here to stop
                continue
        if memo is None:
            plan = _PoolSearch(ctx, pool).plan()
        else:
            ordinal = pool.ordinal
            state = (capacities.get(ordinal) or overlay.capacity(pool), versions.get(key, 0))
            known = memo.by_pool.get(ordinal)
            if (
                known is not None
                and known[0] == state
                and (known[1] is None or (known[2] is head and known[3] == commits))
            ):
                plan = known[1]
            else:
                below = _below_in_pool(ctx, pool)
                if best is not None and best.rank() < _least_rank(below, ordinal):
                    continue  # no plan here can be better: not searched, and nothing remembered
                plan = _fruitless_or_searched(ctx, pool, state[0], below, memo.fruitless)
                memo.by_pool[ordinal] = (state, plan, head, commits)
        if plan is not None and (best is None or plan.rank() < best.rank()):
            best = plan
    return best


def _least_rank(below: _Below, ordinal: int) -> tuple[int, float, int]:
    """The best `PreemptionPlan.rank` a search of this pool may find, with no work already stopping for
    the request: one victim at least, costing at least the cheapest one (victims come cheapest first;
    a sum of costs is no less than any of them). With no victim, after every plan."""
    if not below.eligible:
        return (1 << 62, 0.0, ordinal)
    return (1, below.eligible[0].reservation.cost_per_hour, ordinal)


def _fruitless_or_searched(
    ctx: RequestContext, pool: PoolView, capacity: PoolCapacity, below: _Below, fruitless: dict[int, tuple]
) -> PreemptionPlan | None:
    """The pool's search (`_PoolSearch.plan`), or None where one alike found nothing, in this cycle or
    an earlier one, on this capacity object and these victims (`_Below.content`).

    Such a search read nothing else: no backfill head refused it (a head only refuses more, and the
    next cycle's heads may be others), no work was stopping for the request and no quota was short
    (`_search_memo` gives a memo only then). On a full fleet the same waiting requests search the
    same pools every cycle, and most find nothing: this was about a tenth of such a cycle.
    """
    known = fruitless.get(pool.ordinal)
    if known is not None and known[0] is capacity and known[1] is below.content:
        return None
    search = _PoolSearch(ctx, pool, below)
    plan = search.plan()
    if plan is None and search.below is not None and not search.refused:
        if len(fruitless) >= MAX_FRUITLESS_POOLS:
            fruitless.clear()
        fruitless[pool.ordinal] = (capacity, search.below.content)  # held: identities stay their own
    return plan
