"""Free-GPU histogram of a node pool: an 8-GPU pod fits only where one node has 8 free GPUs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

DISPLAY_BUCKETS = (1, 2, 4, 8)


@dataclass(frozen=True, slots=True)
class FreeGpuHistogram:
    """`at_least[k]` = number of nodes with at least k whole GPUs free (k = 0 .. most GPUs on a node)."""

    at_least: tuple[int, ...] = (0,)

    @classmethod
    def of(cls, whole_free_per_node: Iterable[int], gpus_per_node: int) -> FreeGpuHistogram:
        exact = [0] * (gpus_per_node + 1)
        top = gpus_per_node
        for free in whole_free_per_node:
            if free > top:  # a node larger than the pool says: grow rather than lose it
                exact.extend([0] * (free - top))
                top = free
            exact[free] += 1
        running = 0
        at_least = [0] * (top + 1)
        for k in range(top, -1, -1):
            running += exact[k]
            at_least[k] = running
        return cls(tuple(at_least))

    def nodes_with_at_least(self, gpus: int) -> int:
        if gpus <= 0:
            return self.at_least[0]
        return self.at_least[gpus] if gpus < len(self.at_least) else 0

    @property
    def largest_free_on_one_node(self) -> int:
        for k in range(len(self.at_least) - 1, 0, -1):
            if self.at_least[k]:
                return k
        return 0

    def buckets(self) -> dict[int, int]:
        """The usual display: nodes with >= 1, 2, 4, 8 free GPUs."""
        return {k: self.nodes_with_at_least(k) for k in DISPLAY_BUCKETS}
