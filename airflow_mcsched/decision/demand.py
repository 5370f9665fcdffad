"""A request's needs in the units capacity is counted in (milli-CPU, MiB, GPU milli), computed once."""

from __future__ import annotations

from typing import NamedTuple

from airflow_mcsched.access.capacity import MILLI_PER_GPU
from airflow_mcsched.decision.request import PlacementRequest
from airflow_mcsched.view.allocation import NodeAllocation

MIB_PER_GIB = 1024


class Demand(NamedTuple):
    """One pod's shape times `pods`; `gpus` whole GPUs or a `gpu_milli` share of one, never both.

    A named tuple, not a dataclass: the engine's memos are keyed by it, a dozen lookups per request,
    and a tuple hashes in C (a frozen dataclass's hash is a Python call)."""

    pods: int
    gpus: int
    gpu_milli: int
    cpu_milli: int
    memory_mib: int

    @classmethod
    def of(cls, request: PlacementRequest) -> Demand:
        # positional: a named tuple's keyword arguments cost a Python-level call each request
        return cls(
            request.pods,
            request.gpus,
            request.gpu_milli,
            round(request.cpu * 1000),  # cpu_milli
            round(request.memory_gib * MIB_PER_GIB),  # memory_mib
        )

    @property
    def needs_gpu(self) -> bool:
        return bool(self.gpus or self.gpu_milli)

    @property
    def whole_gpus_total(self) -> int:
        return self.pods * self.gpus

    @property
    def is_large(self) -> bool:
        """Two whole GPUs or more in all: it needs GPUs to come free together, so backfill holds room
        for more such requests than for small ones (`Policy.backfill_large_heads`)."""
        return self.whole_gpus_total >= 2

    @property
    def gpu_equivalent(self) -> float:
        return self.pods * (self.gpus + self.gpu_milli / MILLI_PER_GPU)

    def on(self, node: str) -> NodeAllocation:
        """One pod of this demand placed on `node`."""
        return NodeAllocation(node, self.gpus, self.gpu_milli, self.cpu_milli, self.memory_mib)

    def describe(self) -> str:
        per_pod = f"{self.gpus} GPU" if self.gpus else (f"{self.gpu_milli}m of a GPU" if self.gpu_milli else "no GPU")
        pod = f"{per_pod}, {self.cpu_milli / 1000:g} CPU, {self.memory_mib / MIB_PER_GIB:g} GiB"
        return f"{self.pods} pods x ({pod})" if self.pods > 1 else pod
