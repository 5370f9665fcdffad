"""Where the request allows itself to run: failure domains, kind of work, distance to its data."""

from __future__ import annotations

from airflow_mcsched.decision.filters.base import Filter, Scope
from airflow_mcsched.decision.reasons import Reason
from airflow_mcsched.decision.staging import staging_to


class FailureDomainExcluded(Filter):
    """Avoided clusters or domains (e.g. after a failure), or a required set of domains."""

    reason = Reason.FAILURE_DOMAIN_EXCLUDED
    scope = Scope.CLUSTER
    lasting = True

    def applies(self, ctx):
        r = ctx.request
        return bool(r.avoid_clusters or r.avoid_failure_domains or r.failure_domains)

    def signature(self, ctx):
        r = ctx.request
        return (r.avoid_clusters, r.avoid_failure_domains, r.failure_domains)

    def check(self, ctx, cluster, pool, capacity):
        r = ctx.request
        domain = cluster.failure_domain
        if cluster.name in r.avoid_clusters:
            return "the request avoids this cluster (an earlier attempt failed here)"
        if domain in r.avoid_failure_domains:
            return f"the request avoids failure domain {domain}"
        if r.failure_domains and domain not in r.failure_domains:
            return f"failure domain {domain} is not among the request's {list(r.failure_domains)}"
        return None


class SpreadGroupConflict(Filter):
    """Members of a spread group (e.g. replicas of a service) go to distinct failure domains."""

    reason = Reason.FAILURE_DOMAIN_EXCLUDED
    scope = Scope.CLUSTER

    def applies(self, ctx):
        return ctx.request.spread_group is not None

    def check(self, ctx, cluster, pool, capacity):
        group = ctx.request.spread_group
        if cluster.failure_domain in ctx.cycle.running.spread_domains(group):
            return f"spread group {group} already has a member in failure domain {cluster.failure_domain}"
        return None


class NotSuitedForWork(Filter):
    """Only when the policy makes suitability hard; otherwise it is a score."""

    reason = Reason.NOT_SUITED_FOR_WORK
    scope = Scope.CLUSTER
    lasting = True

    def applies(self, ctx):
        return ctx.policy.work_kind_is_hard

    def signature(self, ctx):
        return (ctx.request.kind,)

    def check(self, ctx, cluster, pool, capacity):
        if ctx.request.kind not in cluster.suited_for:
            kinds = sorted(k.value for k in cluster.suited_for)
            return f"cluster is not suited for {ctx.request.kind.value} work (suited for {kinds})"
        return None


class DataFarAway(Filter):
    """Only when the policy bounds staging time: pulling the data here would take too long."""

    reason = Reason.DATA_FAR_AWAY
    scope = Scope.CLUSTER
    lasting = True

    def applies(self, ctx):
        return ctx.policy.max_staging_seconds is not None and bool(ctx.request.data)

    def signature(self, ctx):
        return (ctx.request.data,)

    def check(self, ctx, cluster, pool, capacity):
        staging = staging_to(ctx, cluster)
        limit = ctx.policy.max_staging_seconds
        if staging.seconds > limit:
            return (
                f"staging {staging.remote_gib:g} GiB at {cluster.data.ingress_gbps:g} Gbit/s takes "
                f"{staging.seconds:.0f}s, more than the policy's {limit:g}s"
            )
        return None
