"""What a capacity read of one cluster observed: its nodes, what they offer and what is in use.

These are the plain facts the sync loop (or the trace replay) gathers; the global view (layer 2)
is built from them plus the cluster profiles. No Kubernetes types leak past this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

# Labels the resource access layer reads on nodes. GPU product follows NVIDIA's GPU feature
# discovery; the pool label is ours (virtual clusters set it; real pools can be mapped to it).
LABEL_GPU_PRODUCT = "nvidia.com/gpu.product"
LABEL_NODE_POOL = "mcsched.io/node-pool"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
LABEL_FAILURE_DOMAIN = "mcsched.io/failure-domain"
RESOURCE_GPU = "nvidia.com/gpu"
# A pod asking for a share of one GPU (time slicing / MPS) says how much, in thousandths.
ANNOTATION_GPU_MILLI = "mcsched.io/gpu-milli"
MILLI_PER_GPU = 1000


@dataclass(frozen=True, slots=True)
class NodeObservation:
    """One node as read from the API: allocatable resources, what bound pods request, health.

    `gpu_milli_free` has one entry per GPU of the node: 1000 = whole GPU free, 0 = fully taken,
    in between = a shared GPU with that much left.
    """

    name: str
    pool: str | None
    gpu_type: str | None
    cpu_milli_allocatable: int
    memory_mib_allocatable: int
    cpu_milli_requested: int
    memory_mib_requested: int
    gpu_milli_free: tuple[int, ...] = ()
    ready: bool = True
    schedulable: bool = True
    labels: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def gpus(self) -> int:
        return len(self.gpu_milli_free)

    @property
    def whole_gpus_free(self) -> int:
        return sum(1 for m in self.gpu_milli_free if m >= MILLI_PER_GPU)

    @property
    def usable(self) -> bool:
        return self.ready and self.schedulable


@dataclass(frozen=True, slots=True)
class ClusterObservation:
    """A full capacity read of one cluster, or the error that prevented it."""

    cluster: str
    observed_at: datetime
    nodes: tuple[NodeObservation, ...] = ()
    pods_running: int = 0
    pods_pending: int = 0
    error: str | None = None
    # Reservations (their pods' `mcsched.io/reservation` label) whose live pods are all on a node,
    # and so already counted in the nodes' use above: the engine does not take them twice.
    reservation_ids_seen: frozenset[str] = frozenset()
    # Reservations with a live pod not yet on a node: the cluster holds the pod (it is alive, its
    # lease is renewed by sight) but no node counts it yet, so the engine still takes its capacity.
    reservation_ids_waiting: frozenset[str] = frozenset()

    @property
    def healthy(self) -> bool:
        return self.error is None
