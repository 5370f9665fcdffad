"""Live capacity of one node pool with its aggregates precomputed, so most fit checks are O(1)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.frozen_init import quick_init
from airflow_mcsched.view.histogram import FreeGpuHistogram
from airflow_mcsched.view.node_capacity import NodeCapacity


@quick_init
@dataclass(frozen=True, slots=True)
class PoolCapacity:
    """Usable nodes of a pool (not-ready and cordoned nodes are left out and only counted) and their sums.

    Aggregates are exact for what they claim: `largest_whole_free_on_node` < 8 proves an 8-GPU
    pod cannot fit; the converse still needs a node check (CPU and memory on that same node).
    """

    nodes: tuple[NodeCapacity, ...]
    gpus_per_node: int
    nodes_excluded: int
    allocatable_gpus: int
    whole_gpus_free: int
    gpu_milli_free: int
    largest_whole_free_on_node: int
    largest_share_free: int
    cpu_milli_free: int
    memory_mib_free: int
    largest_cpu_milli_free_on_node: int
    largest_memory_mib_free_on_node: int
    histogram: FreeGpuHistogram
    node_index: dict[str, int] = field(compare=False, repr=False)
    pods_pending: int = 0
    """The pods its cluster's read found pending (waiting for a node), which `load` reads. Part of
    the content (capacity_table.py), so that the engine, which keeps what it worked out per capacity
    object, works the pool out again when the count moves, as when its nodes do: that count moves
    with almost every read of a live cluster, and as part of the view's layout it made the engine
    learn the whole fleet again."""

    @classmethod
    def of(
        cls,
        nodes: Iterable[NodeCapacity],
        gpus_per_node: int,
        nodes_excluded: int = 0,
        node_index: dict[str, int] | None = None,
        pods_pending: int = 0,
    ) -> PoolCapacity:
        nodes = tuple(nodes)
        alloc = whole = milli = cpu = mem = 0
        top_whole = top_share = top_cpu = top_mem = 0
        for n in nodes:
            alloc += len(n.gpu_milli_free)
            whole += n.whole_gpus_free
            milli += sum(n.gpu_milli_free)
            cpu += n.cpu_milli_free
            mem += n.memory_mib_free
            top_whole = max(top_whole, n.whole_gpus_free)
            top_share = max(top_share, n.largest_share_free)
            top_cpu = max(top_cpu, n.cpu_milli_free)
            top_mem = max(top_mem, n.memory_mib_free)
        if node_index is None:
            node_index = {n.name: i for i, n in enumerate(nodes)}
        return cls(
            nodes,
            gpus_per_node,
            nodes_excluded,
            alloc,
            whole,
            milli,
            top_whole,
            top_share,
            cpu,
            mem,
            top_cpu,
            top_mem,
            FreeGpuHistogram.of((n.whole_gpus_free for n in nodes), gpus_per_node),
            node_index,
            pods_pending,
        )

    @classmethod
    def empty(cls, gpus_per_node: int = 0, nodes_excluded: int = 0) -> PoolCapacity:
        return cls.of((), gpus_per_node, nodes_excluded)

    @property
    def requested_gpus(self) -> float:
        """GPUs in use (a share counts as its fraction), from the view's point of view."""
        return self.allocatable_gpus - self.gpu_milli_free / 1000

    def node(self, name: str) -> NodeCapacity | None:
        i = self.node_index.get(name)
        return None if i is None else self.nodes[i]

    def group_by_node(self, allocations: Iterable[NodeAllocation], into: dict[int, list[NodeAllocation]]) -> None:
        """Add each allocation to `into` under its node's position in the pool, to be given back a
        node at a time; one whose node left the pool (drained, deleted) has nothing to give back."""
        index = self.node_index
        for a in allocations:
            i = index.get(a.node)
            if i is not None:
                into.setdefault(i, []).append(a)

    def _apply(
        self,
        allocations: Iterable[NodeAllocation],
        give_back: bool,
        anywhere: bool = False,
        held: list[tuple[NodeAllocation, ...]] | None = None,
    ) -> PoolCapacity:
        """Change only the touched nodes and update the sums by difference; maxima are re-read only
        when a node that held one went down (so taking from one node of a big pool stays cheap).
        `held` (with `anywhere`): each allocation's pieces as held, in order (`held_anywhere`)."""
        changed: dict[int, NodeCapacity] = {}
        if give_back:  # each node given back its pods at once (a node is made once, not per pod)
            ended: dict[int, list[NodeAllocation]] = {}
            self.group_by_node(allocations, ended)
            for at, pods in ended.items():
                changed[at] = self.nodes[at].give_back_all(pods)
            return self.with_nodes(changed)
        for a in allocations:
            i = self.node_index.get(a.node)
            if i is None:  # the node left the pool (drained, deleted): nothing to hold there
                if held is not None:
                    held.append(())
                continue
            node = changed.get(i) or self.nodes[i]
            if not anywhere:
                changed[i] = node.take(a)
                continue
            here, rest = node.split(a)  # `a` itself when it fits
            changed[i] = node.take(here)
            if held is None:
                if rest is not None:
                    self._spill(changed, rest, i)
                continue
            pieces = [here] if _anything(here) else []
            if rest is not None:
                self._spill(changed, rest, i, pieces)
            held.append(tuple(pieces))
        return self.with_nodes(changed)

    def held_anywhere(self, allocations: Iterable[NodeAllocation]) -> tuple[tuple[NodeAllocation, ...], ...]:
        """Where `take(allocations, anywhere=True)` holds each allocation: the pieces, named for their
        nodes, in order (one allocation that fits its node is held as itself, the same object). What
        stops a spilled reservation must give back these, not its own pods on its own node."""
        held: list[tuple[NodeAllocation, ...]] = []
        self._apply(allocations, give_back=False, anywhere=True, held=held)
        return tuple(held)

    def _spill(
        self,
        changed: dict[int, NodeCapacity],
        rest: NodeAllocation,
        full: int,
        pieces: list[NodeAllocation] | None = None,
    ) -> None:
        """Hold what node `full` had no room for on the pool's other nodes, the roomiest first
        (adding each piece held to `pieces`, when given).

        See `take(..., anywhere=True)`."""
        others = [j for j in range(len(self.nodes)) if j != full]
        others.sort(key=lambda j: (changed.get(j) or self.nodes[j]).whole_gpus_free, reverse=True)
        for j in others:
            node = changed.get(j) or self.nodes[j]
            here, left = node.split(rest)
            if _anything(here):
                changed[j] = node.take(here)
                if pieces is not None:
                    pieces.append(here)
            if left is None:
                return
            rest = left

    def with_nodes(self, changed: dict[int, NodeCapacity]) -> PoolCapacity:
        """This pool with the nodes at these positions replaced (by `_apply`, or by a caller that
        followed the nodes itself, as backfill's replay of running ends does)."""
        if not changed:
            return self
        nodes = list(self.nodes)
        whole, milli, cpu, mem = self.whole_gpus_free, self.gpu_milli_free, self.cpu_milli_free, self.memory_mib_free
        top_whole, top_share = self.largest_whole_free_on_node, self.largest_share_free
        top_cpu, top_mem = self.largest_cpu_milli_free_on_node, self.largest_memory_mib_free_on_node
        at_least = list(self.histogram.at_least)
        rescan = False
        for i, new in changed.items():
            old = nodes[i]
            nodes[i] = new
            whole += new.whole_gpus_free - old.whole_gpus_free
            milli += sum(new.gpu_milli_free) - sum(old.gpu_milli_free)
            cpu += new.cpu_milli_free - old.cpu_milli_free
            mem += new.memory_mib_free - old.memory_mib_free
            lo, hi = sorted((old.whole_gpus_free, new.whole_gpus_free))
            step = 1 if new.whole_gpus_free > old.whole_gpus_free else -1
            for k in range(lo + 1, min(hi, len(at_least) - 1) + 1):
                at_least[k] += step
            rescan = rescan or (
                (old.whole_gpus_free == top_whole and new.whole_gpus_free < top_whole)
                or (old.largest_share_free == top_share and new.largest_share_free < top_share)
                or (old.cpu_milli_free == top_cpu and new.cpu_milli_free < top_cpu)
                or (old.memory_mib_free == top_mem and new.memory_mib_free < top_mem)
            )
            top_whole = max(top_whole, new.whole_gpus_free)
            top_share = max(top_share, new.largest_share_free)
            top_cpu = max(top_cpu, new.cpu_milli_free)
            top_mem = max(top_mem, new.memory_mib_free)
        if max(n.whole_gpus_free for n in changed.values()) >= len(at_least):
            return PoolCapacity.of(nodes, self.gpus_per_node, self.nodes_excluded, self.node_index, self.pods_pending)
        if rescan:
            top_whole = top_share = top_cpu = top_mem = 0
            for n in nodes:
                if n.whole_gpus_free > top_whole:
                    top_whole = n.whole_gpus_free
                if n.largest_share_free > top_share:
                    top_share = n.largest_share_free
                if n.cpu_milli_free > top_cpu:
                    top_cpu = n.cpu_milli_free
                if n.memory_mib_free > top_mem:
                    top_mem = n.memory_mib_free
        return PoolCapacity(
            tuple(nodes),
            self.gpus_per_node,
            self.nodes_excluded,
            self.allocatable_gpus,
            whole,
            milli,
            top_whole,
            top_share,
            cpu,
            mem,
            top_cpu,
            top_mem,
            FreeGpuHistogram(tuple(at_least)),
            self.node_index,
            self.pods_pending,
        )

    def take(self, allocations: Iterable[NodeAllocation], *, anywhere: bool = False) -> PoolCapacity:
        """Capacity after placing these pods (copy-on-write: this object is unchanged).

        A node takes what it has; what it lacks is dropped (a plan of future capacity, as backfill
        makes, must not move work between nodes). With `anywhere`, what it lacks is held on the
        pool's other nodes instead, the roomiest first: for reservations whose pods the read does not
        show yet. A pod's node is the cluster's choice in the end (a pod requires its pool and only
        prefers its node), so a reservation's node may hold another of our pods by now while that
        pod's own node stands free in the read; dropping what does not fit would count that capacity
        free twice (two runs of the Celery test in six held 12 GPUs of an 8-GPU pool so). Held
        elsewhere, the pool's totals stay right, and only which node is busy may differ until the
        next read.
        """
        return self._apply(allocations, give_back=False, anywhere=anywhere)

    def give_back(self, allocations: Iterable[NodeAllocation]) -> PoolCapacity:
        """Capacity after these pods end."""
        return self._apply(allocations, give_back=True)


def _anything(a: NodeAllocation) -> bool:
    return bool(a.gpus or a.gpu_milli or a.cpu_milli or a.memory_mib)
