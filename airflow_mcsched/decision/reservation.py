"""Granted capacity held under a lease: it counts as used until released or expired, never twice."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter

from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.frozen_init import quick_init
from airflow_mcsched.view.snapshot import GlobalView, PoolKey

_gpu_equivalent = attrgetter("gpu_equivalent")


@quick_init
@dataclass(frozen=True, slots=True)
class Reservation:
    """A grant on one node pool: the pods' nodes and sizes, who holds it, at what price, until when.

    `expires_at` is the lease (the service renews it while the work runs); `expected_end` is when
    the work should finish, used to estimate when a waiting gang can start (backfill).
    `preempted_by` marks a victim whose pod is still stopping: it still holds capacity, is not
    chosen as a victim again, and counts as freed for the request that preempted it.
    """

    id: str
    request_id: str
    cluster: str
    pool: str
    pods: tuple[NodeAllocation, ...]
    team: str
    priority: int
    interruptible: bool
    price_per_gpu_hour: float
    granted_at: datetime
    expires_at: datetime
    expected_end: datetime
    gpu_type: str | None = None
    priority_class: str | None = None
    project: str | None = None
    spread_group: str | None = None
    preempted_by: str | None = None
    gpu_equivalent: float = field(init=False, repr=False, compare=False)
    """GPUs held, a share counting as its fraction of one GPU (computed once)."""
    key: PoolKey = field(init=False, repr=False, compare=False)
    """(cluster, pool), made once: every cycle indexes all running work by it."""

    def __post_init__(self) -> None:
        # no generator: one reservation per admission
        object.__setattr__(self, "gpu_equivalent", sum(map(_gpu_equivalent, self.pods)))
        object.__setattr__(self, "key", (self.cluster, self.pool))

    def held_as(self, pods: tuple[NodeAllocation, ...]) -> Reservation:
        """This reservation read where its pool holds it (`WorkBase.held`: pods no read shows yet,
        spilled to other nodes): the same grant on those pods, its size (quota, cost) its own."""
        held = dataclasses.replace(self, pods=pods)
        object.__setattr__(held, "gpu_equivalent", self.gpu_equivalent)
        return held

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.node for a in self.pods))

    @property
    def cost_per_hour(self) -> float:
        return self.gpu_equivalent * self.price_per_gpu_hour

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at <= now

    def pod_visible(self, view: GlobalView) -> bool:
        """True once the cluster's capacity read shows its pods on their nodes: from then on the view
        counts them. A pod the cluster holds but has not bound to a node yet is not visible."""
        return view.has_cluster(self.cluster) and self.id in view.cluster(self.cluster).reservation_ids_seen

    def pod_alive(self, view: GlobalView) -> bool:
        """The cluster holds a live pod of it, on a node or not yet: the grant is in use."""
        return view.holds_pod_of(self.cluster, self.id)
