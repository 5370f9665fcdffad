"""Cluster state and health: cordoned or in maintenance, last read failed, last read too old."""

from __future__ import annotations

from datetime import UTC

from airflow_mcsched.access.profiles import ClusterState
from airflow_mcsched.decision.filters.base import Filter, Scope
from airflow_mcsched.decision.reasons import Reason


class _ClusterWide(Filter):
    """Judged once per cycle for all requests."""

    scope = Scope.CLUSTER
    lasting = True
    request_independent = True

    def signature(self, ctx):
        return ()


class ClusterCordoned(_ClusterWide):
    reason = Reason.CLUSTER_CORDONED

    def check(self, ctx, cluster, pool, capacity):
        if cluster.state is not ClusterState.ACTIVE:
            return f"cluster is {cluster.state.value}: it takes no new work until an operator makes it active"
        return None


class ClusterUnhealthy(_ClusterWide):
    reason = Reason.CLUSTER_UNHEALTHY

    def check(self, ctx, cluster, pool, capacity):
        if cluster.error is not None:
            return f"unhealthy: {cluster.error}"  # a failed read, or its circuit breaker is open
        return None


class ClusterStale(_ClusterWide):
    """A read older than the policy allows. The message names the read's time, not its age: the words
    stay the same from cycle to cycle while the same read stays old (a sync that stopped), and so
    do the plans shared per set of cluster verdicts (candidate_plan.shared_plans); with the age in
    them, every cycle made every plan again for as long as any cluster's read was old."""

    reason = Reason.CLUSTER_STALE

    def check(self, ctx, cluster, pool, capacity):
        if cluster.observed_at is None:
            return "its capacity was never read"
        limit = ctx.cycle.max_observation_age
        if ctx.cycle.now - cluster.observed_at > limit:
            read = cluster.observed_at.astimezone(UTC)
            allowed = limit.total_seconds()
            return f"capacity last read at {read:%Y-%m-%d %H:%M:%S} UTC, longer ago than the {allowed:.0f}s allowed"
        return None
