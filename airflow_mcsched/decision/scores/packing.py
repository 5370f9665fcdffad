"""Packing scores, in [0, 1], from live capacity: fragmentation left behind, and load on the pool."""

from __future__ import annotations

from collections.abc import Iterable

from airflow_mcsched.access.capacity import MILLI_PER_GPU
from airflow_mcsched.decision.scores.base import Score


class FragmentationScore(Score):
    """Prefer leaving whole nodes (and whole GPUs) free for big gangs: 1 = the placement fills exactly.

    Whole GPUs: 1 - mean over used nodes of (free GPUs left / GPUs per node). Shares: 1 - what is
    left on the shared GPU. CPU-only pods: 1 - free GPUs of the node, so they go where GPUs are taken.
    """

    name = "fragmentation"
    dynamic = True

    def signature(self, ctx):
        return (ctx.demand,)

    def upper_bound(self, ctx, cluster, pool, capacity):
        """Single pods: the tightest node the histogram offers (best fit picks it unless CPU or memory
        say otherwise, which only lowers the value); gangs and shares: 1."""
        d = ctx.demand
        if d.pods > 1 or d.gpu_milli or not pool.gpus_per_node:
            return 1.0
        at_least = capacity.histogram.at_least
        top = len(at_least) - 1
        for k in range(d.gpus, top + 1):
            if at_least[k] - (at_least[k + 1] if k < top else 0) > 0:
                return 1 - (k - d.gpus) / pool.gpus_per_node
        return 1.0

    def _left_and_broken(self, ctx, pool, capacity, pods) -> tuple[float, int]:
        d = ctx.demand
        per_node = max(1, pool.gpus_per_node)
        used: dict[str, int] = {}
        for a in pods:
            used[a.node] = used.get(a.node, 0) + 1
        broken = 0
        left_sum = 0.0
        for name, count in used.items():
            node = capacity.node(name)
            if node is None:
                continue
            if d.gpu_milli:
                j = node.best_share_gpu(d.gpu_milli)
                free = node.gpu_milli_free[j] if j is not None else d.gpu_milli
                left_sum += max(0, free - d.gpu_milli * count) / MILLI_PER_GPU
                broken += free >= MILLI_PER_GPU
            elif d.gpus:
                left_sum += max(0, node.whole_gpus_free - d.gpus * count) / per_node
                broken += node.whole_gpus_free >= per_node
            elif pool.gpus_per_node:
                left_sum += node.whole_gpus_free / per_node
        return left_sum / max(1, len(used)), broken

    def measure(self, ctx, cluster, pool, capacity, pods):
        return 1 - self._left_and_broken(ctx, pool, capacity, pods)[0]

    def explain(self, ctx, cluster, pool, capacity, pods):
        left, broken = self._left_and_broken(ctx, pool, capacity, pods)
        return (("left_free_fraction", round(left, 4)), ("whole_nodes_broken", broken))


class LoadScore(Score):
    """Queue pressure and load: prefer pools with GPUs to spare and clusters with few pods pending."""

    name = "load"
    dynamic = True

    def signature(self, ctx):
        return (ctx.demand.gpu_equivalent,)

    def upper_bound(self, ctx, cluster, pool, capacity):
        return self.measure(ctx, cluster, pool, capacity, ())  # does not depend on the nodes chosen

    def _parts(self, ctx, cluster, capacity) -> tuple[float, float]:
        if capacity.allocatable_gpus:
            spare = max(0.0, capacity.gpu_milli_free / MILLI_PER_GPU - ctx.demand.gpu_equivalent)
            free_fraction = spare / capacity.allocatable_gpus
        else:
            cpu_total = sum(n.cpu_milli_allocatable for n in capacity.nodes)
            free_fraction = capacity.cpu_milli_free / cpu_total if cpu_total else 0.0
        pressure = 1 / (1 + capacity.pods_pending / max(1, len(capacity.nodes)))  # the cluster's count
        return free_fraction, pressure

    def measure(self, ctx, cluster, pool, capacity, pods):
        free_fraction, pressure = self._parts(ctx, cluster, capacity)
        return 0.5 * free_fraction + 0.5 * pressure

    def explain(self, ctx, cluster, pool, capacity, pods):
        free_fraction, _ = self._parts(ctx, cluster, capacity)
        return (("free_fraction_after", round(free_fraction, 4)), ("pods_pending", capacity.pods_pending))


_LARGEST = ("whole_nodes", "GPUs of the fleet's largest node")


class WholeNodeScore(Score):
    """Keep nodes coming free whole, for gangs that need all of one: put a pod where it delays the
    moment its node is empty again the least, weighed by how much of a large node it strands.

    A node is busy until the expected end of the work on it (now if nothing runs; never, for work of
    unknown end). A pod that ends by then costs nothing; one that opens an empty node, or outlives
    what runs there, costs (time it adds / its own duration) x (GPUs it leaves free on the node /
    GPUs of the fleet's largest node); the value is 1 - that cost. So small and short pods fill the
    gaps of nodes already busy, long ones join long ones, and empty large nodes stay empty longest.
    Unlike `fragmentation` (which node within a pool), this compares pools too: a small pod goes to
    a partly used node of a pricier pool rather than open an empty large node, as far as the weight
    says. It reads the expected ends of running work and the clock, so it is `per_cycle`.
    """

    name = "whole_nodes"
    dynamic = True
    per_cycle = True

    def signature(self, ctx):
        return (ctx.demand, ctx.duration)

    def _cost(self, ctx, pool, capacity, pods) -> float:
        # (the engine's hottest score: measured for every pool fitted and explained for every
        # admission, so attribute lookups are hoisted and a single pod skips the per-node tally)
        cycle = ctx.cycle
        derived = cycle.memory.derived  # the view's layout: the same for every cycle on it
        largest = derived.get(_LARGEST)
        if largest is None:
            largest = derived[_LARGEST] = max(1, max((p.gpus_per_node for p in cycle.view.pools), default=0))
        d = ctx.demand
        per_pod = d.gpus if d.gpus else d.gpu_milli / MILLI_PER_GPU
        if len(pods) == 1:
            taken: Iterable[tuple[str, float]] = ((pods[0].node, 0.0 + per_pod),)
        else:
            tally: dict[str, float] = {}
            for a in pods:
                tally[a.node] = tally.get(a.node, 0.0) + per_pod
            taken = tally.items()
        seconds = max(1.0, ctx.duration.total_seconds())
        ends = cycle.running.latest_ends(pool.key)
        now = cycle.now
        index, nodes = capacity.node_index, capacity.nodes
        worst = 0.0
        for name, gpus in taken:
            i = index.get(name)
            if i is None:
                continue
            node = nodes[i]
            total = len(node.gpu_milli_free)
            if not total:
                continue
            end = ends.get(name)
            if end is not None:  # seconds until the last of our work on it is expected to end (0: past it)
                until = max(0.0, (end - now).total_seconds())
            elif node.whole_gpus_free == total:
                until = 0.0  # nothing runs and every GPU is free: the pod opens an empty node
            else:
                continue  # work of unknown end holds the node: it is not coming free anyway
            added = min(1.0, max(0.0, seconds - until) / seconds)
            worst = max(worst, added * max(0.0, total - gpus) / largest)
        return worst

    def cycle_free(self, ctx, cluster, pool, capacity, pods):
        """No node of the pods holds our work of known end: each is either empty (the pod opens it,
        whatever the clock) or busy with work of unknown end (not coming free anyway)."""
        ends = ctx.cycle.running.latest_ends(pool.key)
        if ends:
            for a in pods:
                if a.node in ends:
                    return False
        return True

    def measure(self, ctx, cluster, pool, capacity, pods):
        return 1 - self._cost(ctx, pool, capacity, pods)

    def explain(self, ctx, cluster, pool, capacity, pods):
        return (("stranded_node_fraction", round(self._cost(ctx, pool, capacity, pods), 4)),)
