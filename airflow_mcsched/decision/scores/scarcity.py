"""Scarcity, in [0, 1]: work that could run on several GPU types leaves the rare ones to work that cannot.

A request that names one GPU type (or none it could use elsewhere) has no choice, so this score does
not apply to it. For a flexible GPU request, a pool whose GPU type has few GPUs in the whole fleet
compared with what the request takes scores low: taking one of a fleet's only A10s for a job that
would run as well on any of 400 G2s is what later starves the job that needs an A10 (other scores,
`whole_nodes` above all, like small and odd nodes for long work). The value is the fleet's GPUs of
that type over `SCARCE_BELOW` times the request's GPUs, capped at 1: a type with at least 16 times
what the request asks is plentiful for it.
"""

from __future__ import annotations

from airflow_mcsched.decision.scores.base import Score

SCARCE_BELOW = 16
"""A GPU type with fewer GPUs in the fleet than this many times the request's is scarce for it."""


class ScarcityScore(Score):
    name = "scarcity"

    def applies(self, ctx):
        return ctx.demand.needs_gpu and len(ctx.request.gpu_types) != 1

    def signature(self, ctx):
        return (ctx.demand.gpu_equivalent,)

    @staticmethod
    def _fleet_gpus(ctx, gpu_type: str | None) -> int:
        """GPUs of this type over the fleet as read (a cluster whose read failed counts none)."""
        return ctx.cycle.fleet_gpus().get(gpu_type, 0)

    def measure(self, ctx, cluster, pool, capacity, pods):
        wanted = max(ctx.demand.gpu_equivalent, 1e-9) * SCARCE_BELOW
        return min(1.0, self._fleet_gpus(ctx, pool.gpu_type) / wanted)

    def explain(self, ctx, cluster, pool, capacity, pods):
        return (("fleet_gpus_of_type", self._fleet_gpus(ctx, pool.gpu_type)), ("plentiful_at", SCARCE_BELOW))
