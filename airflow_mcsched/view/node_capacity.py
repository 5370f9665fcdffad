"""Free capacity of one usable node, exact enough to decide fit: per-GPU shares, CPU and memory."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from airflow_mcsched.access.capacity import MILLI_PER_GPU
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.frozen_init import quick_init


@quick_init
@dataclass(frozen=True, slots=True)
class NodeCapacity:
    """What is still free on one node; `take` and `give_back` return a new node, never change this one.

    `gpu_milli_free` has one entry per GPU (1000 = whole GPU free). `whole_gpus_free` and
    `largest_share_free` are kept alongside so fit checks do not walk the tuple.
    """

    name: str
    gpu_milli_free: tuple[int, ...]
    cpu_milli_free: int
    memory_mib_free: int
    cpu_milli_allocatable: int
    memory_mib_allocatable: int
    whole_gpus_free: int
    largest_share_free: int

    @classmethod
    def of(
        cls,
        name: str,
        gpu_milli_free: tuple[int, ...],
        cpu_milli_free: int,
        memory_mib_free: int,
        cpu_milli_allocatable: int | None = None,
        memory_mib_allocatable: int | None = None,
    ) -> NodeCapacity:
        whole = 0
        largest = 0
        for m in gpu_milli_free:
            if m >= MILLI_PER_GPU:
                whole += 1
            if m > largest:
                largest = m
        return cls(
            name,
            gpu_milli_free,
            max(0, cpu_milli_free),
            max(0, memory_mib_free),
            cpu_milli_free if cpu_milli_allocatable is None else cpu_milli_allocatable,
            memory_mib_free if memory_mib_allocatable is None else memory_mib_allocatable,
            whole,
            largest,
        )

    @property
    def gpus(self) -> int:
        return len(self.gpu_milli_free)

    def fits(self, gpus: int, gpu_milli: int, cpu_milli: int, memory_mib: int) -> bool:
        return (
            self.whole_gpus_free >= gpus
            and self.largest_share_free >= gpu_milli
            and self.cpu_milli_free >= cpu_milli
            and self.memory_mib_free >= memory_mib
        )

    def best_share_gpu(self, gpu_milli: int) -> int | None:
        """Index of the GPU a share should go to: the fullest one that still has room (best fit)."""
        best = None
        best_free = MILLI_PER_GPU + 1
        for i, m in enumerate(self.gpu_milli_free):
            if gpu_milli <= m < best_free:
                best, best_free = i, m
        return best

    def assign(self, a: NodeAllocation) -> NodeAllocation:
        """`a` with the GPUs it would hold here: the first whole free GPUs, or the best-fit GPU for a share."""
        if a.gpus:
            whole = tuple(i for i, m in enumerate(self.gpu_milli_free) if m >= MILLI_PER_GPU)[: a.gpus]
        elif a.gpu_milli:
            i = self.best_share_gpu(a.gpu_milli)
            whole = () if i is None else (i,)
        else:
            return a
        # not dataclasses.replace: it is slow, and every placement makes one of these per pod
        return NodeAllocation(a.node, a.gpus, a.gpu_milli, a.cpu_milli, a.memory_mib, whole)

    def split(self, a: NodeAllocation) -> tuple[NodeAllocation, NodeAllocation | None]:
        """(what of `a` this node has room for, named for this node; the rest, or None when it all fits).

        A reservation granted on this node whose pod the cluster's own scheduler bound to another
        node of the pool, while another pod of ours took this one: what no longer fits here is in use
        elsewhere in the pool (`PoolCapacity.take` spills it there). Whole GPUs, CPU and memory
        split; a share of one GPU does not.
        """
        if self._holds(a) or self.fits(a.gpus, a.gpu_milli, a.cpu_milli, a.memory_mib):
            return (
                a if a.node == self.name else NodeAllocation(self.name, a.gpus, a.gpu_milli, a.cpu_milli, a.memory_mib)
            ), None
        gpus = min(a.gpus, self.whole_gpus_free)
        share = a.gpu_milli if a.gpu_milli and self.largest_share_free >= a.gpu_milli else 0
        cpu, mem = min(a.cpu_milli, self.cpu_milli_free), min(a.memory_mib, self.memory_mib_free)
        here = NodeAllocation(self.name, gpus, share, cpu, mem)
        rest = NodeAllocation("", a.gpus - gpus, a.gpu_milli - share, a.cpu_milli - cpu, a.memory_mib - mem)
        return here, rest

    def _holds(self, a: NodeAllocation) -> bool:
        """Are `a`'s named GPUs free enough here to be taken as named?"""
        free = self.gpu_milli_free
        if not a.gpu_indices or any(i >= len(free) for i in a.gpu_indices):
            return False
        if a.gpus:
            return len(a.gpu_indices) == a.gpus and all(free[i] >= MILLI_PER_GPU for i in a.gpu_indices)
        return len(a.gpu_indices) == 1 and free[a.gpu_indices[0]] >= a.gpu_milli

    def take(self, a: NodeAllocation) -> NodeCapacity:
        """Capacity left after placing `a`, on its named GPUs when they are free, else matched by amount.

        Takes what is there when the node no longer has it all (a reservation granted earlier whose
        node has filled up since): nothing goes negative.
        """
        free = list(self.gpu_milli_free)
        if self._holds(a):
            for i in a.gpu_indices:
                free[i] -= a.gpu_milli if a.gpu_milli else MILLI_PER_GPU
        else:
            need = a.gpus
            for i, m in enumerate(free):
                if need == 0:
                    break
                if m >= MILLI_PER_GPU:
                    free[i] = 0
                    need -= 1
            if a.gpu_milli:
                j = self.best_share_gpu(a.gpu_milli)
                if j is None and free:
                    j = max(range(len(free)), key=free.__getitem__)
                if j is not None:
                    free[j] = max(0, free[j] - a.gpu_milli)
        return NodeCapacity.of(
            self.name,
            tuple(free),
            self.cpu_milli_free - a.cpu_milli,
            self.memory_mib_free - a.memory_mib,
            self.cpu_milli_allocatable,
            self.memory_mib_allocatable,
        )

    def give_back(self, a: NodeAllocation) -> NodeCapacity:
        """Capacity after `a` ends: to its named GPUs, else whole GPUs to empty ones and a share to the
        fullest GPU it fits back on; never above a whole GPU."""
        return self.give_back_all((a,))

    def give_back_all(self, allocations: Iterable[NodeAllocation]) -> NodeCapacity:
        """Capacity after all of `allocations` end: `give_back` of each in turn, made as one node
        (work that ends at one instant often holds several pods on one node)."""
        free = list(self.gpu_milli_free)
        cpu, cpu_top = self.cpu_milli_free, self.cpu_milli_allocatable
        mem, mem_top = self.memory_mib_free, self.memory_mib_allocatable
        cpu, mem, whole = give_back_in_place(free, cpu, mem, self.whole_gpus_free, cpu_top, mem_top, allocations)
        return NodeCapacity.counted(self.name, free, cpu, mem, whole, cpu_top, mem_top)

    @classmethod
    def counted(
        cls, name: str, free: list[int], cpu: int, mem: int, whole: int, cpu_top: int, mem_top: int
    ) -> NodeCapacity:
        """`of` for GPUs whose whole free ones are counted already (`give_back_in_place`, whose
        order the numbers come in): made without `of`'s walk."""
        largest = max(free, default=0)
        return cls(name, tuple(free), cpu, mem, cpu_top, mem_top, whole, largest if largest > 0 else 0)


def give_back_in_place(
    free: list[int], cpu: int, mem: int, whole: int, cpu_top: int, mem_top: int, allocations: Iterable[NodeAllocation]
) -> tuple[int, int, int]:
    """A node's numbers after `allocations` end, `give_back` of each in turn: `free` (each GPU's free
    share, changed in place), and from its free CPU, memory and whole GPUs (as `of` counts them:
    shares of a whole GPU or more) and its allocatable CPU and memory, the free CPU, memory and whole
    GPUs after, each step clamped as `of` would leave it.

    Inlined for pods that name their GPUs (every pod the engine places does), and the whole GPUs
    counted as they come free: a backfill head's replay gives back a node for every end it passes,
    thousands a cycle on a busy fleet (`backfill._PoolReplay` follows its nodes with this)."""
    n = len(free)
    for a in allocations:
        indices = a.gpu_indices
        if indices and max(indices) < n:  # to its named GPUs, as `give_back_gpus` gives them
            back = a.gpu_milli or MILLI_PER_GPU
            for i in indices:
                m = free[i]
                if m + back >= MILLI_PER_GPU:
                    free[i] = MILLI_PER_GPU
                    whole += m < MILLI_PER_GPU  # one more whole, unless it was whole already
                else:
                    free[i] = m + back
        elif a.gpus or a.gpu_milli:
            give_back_gpus(free, a)
            whole = sum([m >= MILLI_PER_GPU for m in free])
        cpu += a.cpu_milli
        if cpu > cpu_top:
            cpu = cpu_top
        if cpu < 0:
            cpu = 0
        mem += a.memory_mib
        if mem > mem_top:
            mem = mem_top
        if mem < 0:
            mem = 0
    return cpu, mem, whole


def give_back_gpus(free: list[int], a: NodeAllocation) -> None:
    """`a`'s GPUs back into `free` (per GPU), as `NodeCapacity.give_back` says."""
    back = a.gpu_milli if a.gpu_milli else MILLI_PER_GPU
    if a.gpu_indices and all(i < len(free) for i in a.gpu_indices):
        for i in a.gpu_indices:
            free[i] = min(MILLI_PER_GPU, free[i] + back)
        return
    need = a.gpus
    for i, m in enumerate(free):
        if need == 0:
            break
        if m == 0:
            free[i] = MILLI_PER_GPU
            need -= 1
    if a.gpu_milli:
        target = None
        for i, m in enumerate(free):
            if m < MILLI_PER_GPU and m + a.gpu_milli <= MILLI_PER_GPU and (target is None or m < free[target]):
                target = i
        if target is not None:
            free[target] += a.gpu_milli
