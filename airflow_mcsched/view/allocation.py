"""What one pod takes on one node: the unit by which tentative allocations and reservations change capacity."""

from __future__ import annotations

from dataclasses import dataclass

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

    @property
    def gpu_equivalent(self) -> float:
        """GPUs this pod holds, counting a share as its fraction of one GPU."""
        return self.gpus + self.gpu_milli / 1000
