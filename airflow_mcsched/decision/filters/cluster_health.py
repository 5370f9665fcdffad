"""Cluster state and health: cordoned or in maintenance, last read failed, last read too old."""

from __future__ import annotations

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
    reason = Reason.CLUSTER_STALE

    def check(self, ctx, cluster, pool, capacity):
        if cluster.observed_at is None:
            return "its capacity was never read"
        age = ctx.cycle.now - cluster.observed_at
        limit = ctx.cycle.max_observation_age
        if age > limit:
            return f"capacity last read {age.total_seconds():.0f}s ago, older than {limit.total_seconds():.0f}s"
        return None
