"""What bringing a request's data to a cluster costs: staging time (size / ingress) and egress price."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_mcsched.decision import plan_cache
from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.view.bounded_table import get_or_make
from airflow_mcsched.view.snapshot import ClusterView

GBIT_PER_GIB = 8 * 1024**3 / 1e9


@dataclass(frozen=True, slots=True)
class Staging:
    """Data to move to run on one cluster: GiB already local, GiB to pull, seconds, egress dollars."""

    local_gib: float
    remote_gib: float
    seconds: float
    egress_dollars: float


def staging_to(ctx: RequestContext, cluster: ClusterView) -> Staging:
    """Remote data is pulled at the cluster's ingress bandwidth; egress is paid at the cheapest holder."""
    memo = ctx.cycle.staging_memo
    memo_key = (ctx.request.data, cluster.name)
    known = memo.get(memo_key)
    if known is not None:
        return known
    if len(memo) >= plan_cache.MAX_STAGINGS:
        memo.clear()
    local = remote = egress = 0.0
    for d in ctx.request.data:
        if cluster.data.holds(d.location):
            local += d.size_gib
            continue
        remote += d.size_gib
        holders = ctx.cycle.data_holders(d.location)
        if holders:
            egress += d.size_gib * min(ctx.cycle.view.cluster(h).data.egress_price_per_gib for h in holders)
    seconds = remote * GBIT_PER_GIB / cluster.data.ingress_gbps
    staging = memo[memo_key] = Staging(local, remote, seconds, egress)
    return staging


def staging_everywhere(ctx: RequestContext) -> dict[str, Staging]:
    """`staging_to` every cluster of the view, by name: worked out once per list of data (and kept with
    the view's layout, as `staging_to` is), for a score measured over every pool of a new plan."""
    clusters = ctx.cycle.view.clusters
    return get_or_make(
        ctx.cycle.staging_memo,
        (ctx.request.data, None),
        plan_cache.MAX_STAGINGS,
        lambda: {c.name: staging_to(ctx, c) for c in clusters},
    )
