"""Does the request fit the pool's free capacity now, judged from the pool's precomputed aggregates.

These are necessary conditions checked in O(1) (the gang check walks nodes); the node chooser
makes the final, exact check on single nodes.
"""

from __future__ import annotations

from airflow_mcsched.decision.filters.base import Filter, Scope
from airflow_mcsched.decision.node_choice import pods_that_fit
from airflow_mcsched.decision.reasons import Reason


class InsufficientFreeGpus(Filter):
    reason = Reason.INSUFFICIENT_FREE_GPUS
    scope = Scope.CAPACITY
    fit = True

    def applies(self, ctx):
        return ctx.demand.needs_gpu

    def check(self, ctx, cluster, pool, capacity):
        d = ctx.demand
        if d.gpus:
            if capacity.whole_gpus_free < d.whole_gpus_total:
                return (
                    f"{d.whole_gpus_total} {pool.gpu_type} GPUs asked, {capacity.whole_gpus_free} free "
                    f"of {capacity.allocatable_gpus}"
                )
        elif capacity.largest_share_free < d.gpu_milli or capacity.gpu_milli_free < d.pods * d.gpu_milli:
            return f"no {pool.gpu_type} GPU has {d.gpu_milli}m free (most on one GPU: {capacity.largest_share_free}m)"
        return None


class NodesTooSmall(Filter):
    """A pod larger than any node of the pool will never fit there, however long it waits."""

    reason = Reason.DOES_NOT_FIT_ON_ONE_NODE
    scope = Scope.POOL
    lasting = True

    def applies(self, ctx):
        return ctx.demand.gpus > 0

    def signature(self, ctx):
        return (ctx.demand.gpus,)

    def check(self, ctx, cluster, pool, capacity):
        if pool.gpus_per_node < ctx.demand.gpus:
            return (
                f"nodes of this pool have {pool.gpus_per_node} GPUs; a pod asks {ctx.demand.gpus} "
                "(split it into a gang of smaller pods)"
            )
        return None


class DoesNotFitOnOneNode(Filter):
    """Enough GPUs in the pool, but not on one node: two nodes with 4 free do not make one 8-GPU pod."""

    reason = Reason.DOES_NOT_FIT_ON_ONE_NODE
    scope = Scope.CAPACITY
    fit = True

    def applies(self, ctx):
        return ctx.demand.gpus > 0

    def check(self, ctx, cluster, pool, capacity):
        need = ctx.demand.gpus
        if capacity.largest_whole_free_on_node < need:
            hist = ", ".join(f">={k}: {n}" for k, n in capacity.histogram.buckets().items())
            return (
                f"a pod needs {need} GPUs on one node; the most free on one node is "
                f"{capacity.largest_whole_free_on_node} (nodes with free GPUs {hist})"
            )
        return None


class GangDoesNotFit(Filter):
    """All pods of a gang start together or none does."""

    reason = Reason.GANG_DOES_NOT_FIT
    scope = Scope.CAPACITY
    fit = True

    def applies(self, ctx):
        return ctx.demand.pods > 1

    def check(self, ctx, cluster, pool, capacity):
        fit = pods_that_fit(capacity, ctx.demand)
        if fit < ctx.demand.pods:
            return f"only {fit} of the gang's {ctx.demand.pods} pods fit at once"
        return None


class InsufficientCpu(Filter):
    reason = Reason.INSUFFICIENT_CPU
    scope = Scope.CAPACITY
    fit = True

    def check(self, ctx, cluster, pool, capacity):
        d = ctx.demand
        if capacity.largest_cpu_milli_free_on_node < d.cpu_milli or capacity.cpu_milli_free < d.pods * d.cpu_milli:
            return (
                f"{d.cpu_milli / 1000:g} CPU per pod asked; the most free on one node is "
                f"{capacity.largest_cpu_milli_free_on_node / 1000:g}"
            )
        return None


class InsufficientMemory(Filter):
    reason = Reason.INSUFFICIENT_MEMORY
    scope = Scope.CAPACITY
    fit = True

    def check(self, ctx, cluster, pool, capacity):
        d = ctx.demand
        if capacity.largest_memory_mib_free_on_node < d.memory_mib or capacity.memory_mib_free < d.pods * d.memory_mib:
            return (
                f"{d.memory_mib / 1024:g} GiB per pod asked; the most free on one node is "
                f"{capacity.largest_memory_mib_free_on_node / 1024:g} GiB"
            )
        return None
