"""Fitness scores, in [0, 1]: the cluster suits this kind of work; spot discount for interruptible work."""

from __future__ import annotations

from airflow_mcsched.decision.scores.base import Score


class SuitabilityScore(Score):
    """1 where the cluster's profile lists the request's kind of work, else 0 (a hard filter if the policy says)."""

    name = "suitability"

    def signature(self, ctx):
        return (ctx.request.kind,)

    def measure(self, ctx, cluster, pool, capacity, pods):
        return 1.0 if ctx.request.kind in cluster.suited_for else 0.0

    def explain(self, ctx, cluster, pool, capacity, pods):
        return (("kind", ctx.request.kind.value), ("suited", ctx.request.kind in cluster.suited_for))


class SpotDiscountScore(Score):
    """Interruptible work goes to spot offers, leaving on-demand capacity to work that must not stop."""

    name = "spot"

    def applies(self, ctx):
        return ctx.request.interruptible

    def signature(self, ctx):
        return ()

    def measure(self, ctx, cluster, pool, capacity, pods):
        spot = pool.spot_price_per_gpu_hour
        if spot is None or not pool.price_per_gpu_hour:
            return 0.0
        return 1 - spot / pool.price_per_gpu_hour

    def explain(self, ctx, cluster, pool, capacity, pods):
        offered = pool.spot_price_per_gpu_hour is not None
        return (("spot_offered", offered), ("discount", round(self.measure(ctx, cluster, pool, capacity, pods), 4)))
