"""What a node pool is, whatever is free on it: GPU type and memory, sharing, network, storage, price."""

from __future__ import annotations

from airflow_mcsched.decision.filters.base import Filter, Scope
from airflow_mcsched.decision.reasons import Reason


class NoMatchingGpuType(Filter):
    reason = Reason.NO_MATCHING_GPU_TYPE
    scope = Scope.POOL
    lasting = True

    def applies(self, ctx):
        return ctx.demand.needs_gpu

    def signature(self, ctx):
        return (ctx.request.gpu_types,)

    def check(self, ctx, cluster, pool, capacity):
        if pool.gpu_type is None:
            return "pool has no GPUs"
        types = ctx.request.gpu_types
        if types and pool.gpu_type not in types:
            return f"pool has {pool.gpu_type}; the request accepts {list(types)}"
        return None


class InsufficientGpuMemory(Filter):
    reason = Reason.INSUFFICIENT_GPU_MEMORY
    scope = Scope.POOL
    lasting = True

    def applies(self, ctx):
        return ctx.request.min_gpu_memory_gib is not None

    def signature(self, ctx):
        return (ctx.request.min_gpu_memory_gib,)

    def check(self, ctx, cluster, pool, capacity):
        need = ctx.request.min_gpu_memory_gib
        if pool.gpu_memory_gib < need:
            return f"{pool.gpu_type} has {pool.gpu_memory_gib:g} GiB per GPU, {need:g} GiB asked"
        return None


class NoGpuSharing(Filter):
    reason = Reason.NO_GPU_SHARING
    scope = Scope.POOL
    lasting = True

    def applies(self, ctx):
        return bool(ctx.demand.gpu_milli)

    def signature(self, ctx):
        return (ctx.demand.gpu_milli,)

    def check(self, ctx, cluster, pool, capacity):
        if not pool.gpu_sharing:
            return f"pool gives whole GPUs only; a share of {ctx.demand.gpu_milli}m needs GPU sharing"
        return None


class NoRdma(Filter):
    reason = Reason.NO_RDMA
    scope = Scope.POOL
    lasting = True

    def applies(self, ctx):
        return ctx.request.needs_rdma

    def signature(self, ctx):
        return ()

    def check(self, ctx, cluster, pool, capacity):
        if not pool.has_rdma:
            links = sorted(i.value for i in pool.interconnect) or ["none declared"]
            return f"pool has no RDMA interconnect (InfiniBand or RoCE); it has {links}"
        return None


class SlowStorage(Filter):
    reason = Reason.SLOW_STORAGE
    scope = Scope.POOL
    lasting = True

    def applies(self, ctx):
        return ctx.request.needs_fast_storage

    def signature(self, ctx):
        return ()

    def check(self, ctx, cluster, pool, capacity):
        need = ctx.policy.fast_storage_gbps
        if pool.storage_gbps < need:
            return f"pool storage reads at {pool.storage_gbps:g} Gbit/s; fast storage means >= {need:g}"
        return None


class CostCeiling(Filter):
    reason = Reason.COST_CEILING
    scope = Scope.POOL
    lasting = True

    def applies(self, ctx):
        return ctx.request.max_cost_per_hour is not None

    def signature(self, ctx):
        r = ctx.request
        return (r.interruptible, ctx.demand.gpu_equivalent, r.max_cost_per_hour)

    def check(self, ctx, cluster, pool, capacity):
        price = pool.price_for(ctx.request.interruptible)
        per_hour = price * ctx.demand.gpu_equivalent
        if per_hour > ctx.request.max_cost_per_hour:
            return (
                f"{ctx.demand.gpu_equivalent:g} GPU x {price:.2f}/GPU-hour = {per_hour:.2f}/hour, "
                f"above the ceiling of {ctx.request.max_cost_per_hour:.2f}/hour"
            )
        return None
