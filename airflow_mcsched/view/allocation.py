"""What one pod takes on one node: the unit by which tentative allocations and reservations change capacity."""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_mcsched.view.frozen_init import quick_init


@quick_init
@dataclass(frozen=True, slots=True)
class NodeAllocation:
    """One pod's share of one node: whole GPUs, or a share of one GPU, plus CPU and memory.

    `gpu_milli` is a share of a single GPU (1..999, time slicing / MPS); a pod asks either whole
    GPUs or one share, never both. `gpu_indices` names the GPUs it holds (set by the node chooser)
    so that giving them back is exact; without them, capacity is matched by amount.
    """

    node: str
    gpus: int = 0
    gpu_milli: int = 0
    cpu_milli: int = 0
    memory_mib: int = 0
    gpu_indices: tuple[int, ...] = ()
    _hash: int = field(init=False, default=0, repr=False, compare=False, hash=False)
    """The hash, worked out when first asked (0 until then)."""

    def __hash__(self) -> int:
        """The fields' hash, kept: a pod is hashed every cycle in the keys of the capacity its
        reservation changes (plan_cache.py), a full fleet's running work some 27,000 pods a cycle, and
        a dataclass's own `__hash__` builds and hashes a tuple of the fields each time."""
        h = self._hash
        if not h:
            h = hash((self.node, self.gpus, self.gpu_milli, self.cpu_milli, self.memory_mib, self.gpu_indices))
            _set_hash(self, h)
        return h

    def __reduce__(self) -> tuple:
        """Pickled by its fields alone: a hash kept in one process (its string hashes salted) is
        wrong in another."""
        return (
            NodeAllocation,
            (self.node, self.gpus, self.gpu_milli, self.cpu_milli, self.memory_mib, self.gpu_indices),
        )

    @property
    def gpu_equivalent(self) -> float:
        """GPUs this pod holds, counting a share as its fraction of one GPU."""
        return self.gpus + self.gpu_milli / 1000


_set_hash = NodeAllocation.__dict__["_hash"].__set__  # the slot's own setter: the class is frozen
