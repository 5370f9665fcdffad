"""Who may take GPUs now: GPUs kept for priority classes or teams, and the team's quota."""

from __future__ import annotations

from airflow_mcsched.access.profiles import GpuReservation
from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.filters.base import Filter, Scope
from airflow_mcsched.decision.reasons import Reason
from airflow_mcsched.view.snapshot import ClusterView


def _entitled(kept: GpuReservation, team: str, priority_class: str | None) -> bool:
    return team in kept.teams or (priority_class is not None and priority_class in kept.priority_classes)


def _kept_for(kept: GpuReservation) -> str:
    who = [f"priority classes {kept.priority_classes}"] if kept.priority_classes else []
    who += [f"teams {kept.teams}"] if kept.teams else []
    return " and ".join(who)


def _entitled_use(ctx: RequestContext, cluster: ClusterView, kept: GpuReservation) -> float:
    """GPUs of the kept type that entitled work already holds in this cluster (they count toward the kept set)."""
    use = 0.0
    for p in cluster.pools:
        if p.gpu_type != kept.gpu_type:
            continue
        for r in ctx.cycle.running_in(p.key):
            if _entitled(kept, r.team, r.priority_class):
                use += r.gpu_equivalent
    return use


def _held_for_others(
    ctx: RequestContext, cluster: ClusterView, gpu_type: str | None, priority_class: str | None
) -> float | str:
    """GPUs of `gpu_type` the cluster keeps for others than the request's team and priority class, less
    what entitled work already holds of them; or the message when every GPU of the type is kept.
    The same for every pool of the type and every request of the team and class while the running
    work is unchanged: kept for the cycle with its log's length (each of a thousand waiting
    requests judges it on every pool of the type, every cycle, and went over the cluster's work)."""
    cycle, team = ctx.cycle, ctx.request.team
    key = (cluster.name, gpu_type, team, priority_class)
    known = cycle.held_for_others.get(key)
    if known is not None and known[0] == len(cycle.running.log):
        return known[1]
    held = 0.0
    answer: float | str = 0.0
    for kept in cluster.reserved:
        if kept.gpu_type != gpu_type or _entitled(kept, team, priority_class):
            continue
        if kept.gpus is None:
            answer = f"every {kept.gpu_type} GPU of this cluster is kept for {_kept_for(kept)}"
            break
        held += max(0.0, kept.gpus - _entitled_use(ctx, cluster, kept))
    else:
        answer = held
    cycle.held_for_others[key] = (len(cycle.running.log), answer)
    return answer


class ReservedForPriority(Filter):
    """GPUs a cluster keeps for some priority classes or teams: others may use only what is beyond them."""

    reason = Reason.RESERVED_FOR_PRIORITY
    scope = Scope.CAPACITY

    def applies(self, ctx):
        return ctx.demand.needs_gpu and ctx.cycle.any_reserved

    def check(self, ctx, cluster, pool, capacity):
        if not cluster.reserved:
            return None
        priority_class = ctx.request.priority_class or ctx.policy.default_priority_class
        held = _held_for_others(ctx, cluster, pool.gpu_type, priority_class)
        if isinstance(held, str):
            return held
        free = capacity.gpu_milli_free / 1000
        if held and free - held < ctx.demand.gpu_equivalent:
            return (
                f"{held:g} of the {free:g} free {pool.gpu_type} GPUs are kept for others "
                f"({priority_class!r} / team {ctx.request.team} is not entitled); {ctx.demand.gpu_equivalent:g} asked"
            )
        return None


class QuotaExceeded(Filter):
    reason = Reason.QUOTA_EXCEEDED
    scope = Scope.CAPACITY

    def applies(self, ctx):
        return ctx.demand.needs_gpu and ctx.request.team in ctx.cycle.teams_with_quota

    def check(self, ctx, cluster, pool, capacity):
        verdict = ctx.cycle.quota.check(ctx.request.team, pool.gpu_type, ctx.demand.gpu_equivalent)
        return None if verdict.ok else verdict.message
