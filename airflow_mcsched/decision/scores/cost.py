"""Cost scores, in dollars per GPU-hour of the run: the pool's price, and what bringing the data here adds."""

from __future__ import annotations

from airflow_mcsched.decision.scores.base import Score
from airflow_mcsched.decision.staging import staging_everywhere, staging_to


class PriceScore(Score):
    """GPU-hours x the pool's price (the spot price for interruptible work where the pool offers one)."""

    name = "price"
    in_dollars = True

    def signature(self, ctx):
        return (ctx.request.interruptible,)

    def measure(self, ctx, cluster, pool, capacity, pods):
        return pool.price_for(ctx.request.interruptible)

    def static_column(self, ctx, pools):
        interruptible = ctx.request.interruptible
        return [p.price_for(interruptible) for _, p in pools]

    def explain(self, ctx, cluster, pool, capacity, pods):
        price = pool.price_for(ctx.request.interruptible)
        spot = ctx.request.interruptible and pool.spot_price_per_gpu_hour is not None
        return (
            ("price_per_gpu_hour", price),
            ("spot", spot),
            ("gpu_hours", ctx.gpu_hours),
            ("dollars", price * ctx.gpu_hours),
        )


class DataLocalityScore(Score):
    """Egress for remote data plus the GPUs' idle time while it stages (size / ingress bandwidth)."""

    name = "data"
    in_dollars = True

    def applies(self, ctx):
        return bool(ctx.request.data)

    def signature(self, ctx):
        return (ctx.request.data, ctx.request.interruptible, ctx.demand.gpu_equivalent, ctx.hours)

    def _idle_dollars(self, ctx, pool, seconds: float) -> float:
        return seconds / 3600 * pool.price_for(ctx.request.interruptible) * ctx.demand.gpu_equivalent

    def measure(self, ctx, cluster, pool, capacity, pods):
        """(egress + idle GPUs while staging) spread over the run's GPU-hours (at least one)."""
        s = staging_to(ctx, cluster)
        return (s.egress_dollars + self._idle_dollars(ctx, pool, s.seconds)) / max(1.0, ctx.gpu_hours)

    def static_column(self, ctx, pools):
        """`measure` over many pools, the request's part and every cluster's staging worked out once;
        the same operations in the same order, so every value is bit-equal to `measure`'s."""
        interruptible, gpus, spread = ctx.request.interruptible, ctx.demand.gpu_equivalent, max(1.0, ctx.gpu_hours)
        staged = staging_everywhere(ctx)
        return [
            (s.egress_dollars + s.seconds / 3600 * p.price_for(interruptible) * gpus) / spread
            for c, p in pools
            for s in (staged[c.name],)
        ]

    def explain(self, ctx, cluster, pool, capacity, pods):
        s = staging_to(ctx, cluster)
        return (
            ("local_gib", s.local_gib),
            ("remote_gib", s.remote_gib),
            ("staging_seconds", round(s.seconds, 1)),
            ("egress_dollars", s.egress_dollars),
            ("staging_idle_dollars", self._idle_dollars(ctx, pool, s.seconds)),
        )
