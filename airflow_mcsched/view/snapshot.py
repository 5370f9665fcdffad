"""The global view: an immutable snapshot of every cluster and node pool, with its age (layer 2)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from airflow_mcsched.access.profiles import (
    ClusterKind,
    ClusterState,
    DataLocality,
    GpuReservation,
    Interconnect,
    WorkKind,
)
from airflow_mcsched.view.pool_capacity import PoolCapacity

PoolKey = tuple[str, str]
"""(cluster name, node pool name): the unit a placement decision picks."""


def _frozen(labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


class DeclaredLayout:
    """What a profile declares of a cluster and its pools, as a value that hashes once.

    Every cycle looks the view's layout up (plan_cache.py); hashing a hundred clusters' nested
    tuples each time cost more than deciding one request, so the hash is kept, and views built
    from the same profile object share one instance, which compares equal by identity first.
    """

    __slots__ = ("_hash", "value")

    def __init__(self, value: tuple) -> None:
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, DeclaredLayout):
            return NotImplemented
        return self._hash == other._hash and self.value == other.value


def share_declared(cluster: ClusterView, declared: DeclaredLayout) -> None:
    """Give a new cluster view the declared layout of an earlier one built from the same profile
    object at the same place in the fleet (the builder's memo: profiles are frozen models)."""
    object.__setattr__(cluster, "_declared", declared)


@dataclass(frozen=True, slots=True)
class PoolView:
    """One node pool: what the profile declares (type, network, prices) and what is free now."""

    cluster: str
    name: str
    ordinal: int
    gpu_type: str | None
    gpu_memory_gib: float
    gpus_per_node: int
    interconnect: frozenset[Interconnect]
    has_rdma: bool
    storage_gbps: float
    price_per_gpu_hour: float
    spot_price_per_gpu_hour: float | None
    gpu_sharing: bool
    labels: Mapping[str, str]
    capacity: PoolCapacity
    key: PoolKey = field(init=False, repr=False, compare=False)
    """(cluster, name): made once, not at each reading (a full fleet's cycle reads it some 75,000
    times, in its searches for work to stop)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", (self.cluster, self.name))

    @property
    def declared(self) -> tuple:
        """What the profile declares of the pool, and its place in the fleet (see `GlobalView.layout`)."""
        return (
            self.cluster,
            self.name,
            self.ordinal,
            self.gpu_type,
            self.gpu_memory_gib,
            self.gpus_per_node,
            self.interconnect,
            self.has_rdma,
            self.storage_gbps,
            self.price_per_gpu_hour,
            self.spot_price_per_gpu_hour,
            self.gpu_sharing,
            _frozen(self.labels),
        )

    def price_for(self, interruptible: bool) -> float:
        """Price per GPU-hour the work pays here: the spot price for interruptible work where offered."""
        if interruptible and self.spot_price_per_gpu_hour is not None:
            return self.spot_price_per_gpu_hour
        return self.price_per_gpu_hour


@dataclass(frozen=True, slots=True)
class ClusterView:
    """One cluster: placement facts from its profile, and the health and age of its last capacity read."""

    name: str
    kind: ClusterKind
    region: str
    zone: str
    failure_domain: str
    state: ClusterState
    suited_for: frozenset[WorkKind]
    data: DataLocality
    reserved: tuple[GpuReservation, ...]
    labels: Mapping[str, str]
    observed_at: datetime | None
    error: str | None
    pods_running: int
    pods_pending: int
    reservation_ids_seen: frozenset[str]
    """Reservations whose pods the nodes' use already counts (`ClusterObservation`)."""
    reservation_ids_waiting: frozenset[str]
    """Reservations with a pod the cluster holds but no node counts yet."""
    pools: tuple[PoolView, ...]
    _declared: DeclaredLayout | None = field(init=False, repr=False, compare=False, default=None)

    def holds_pod_of(self, reservation_id: str) -> bool:
        """The cluster holds a live pod of this reservation, on a node or waiting for one."""
        return reservation_id in self.reservation_ids_seen or reservation_id in self.reservation_ids_waiting

    @property
    def healthy(self) -> bool:
        """Read without error. A cluster never read is not unhealthy but stale (see `age`)."""
        return self.error is None

    def age(self, now: datetime) -> timedelta | None:
        """How old its capacity read is; None when it was never read."""
        return None if self.observed_at is None else now - self.observed_at

    def is_stale(self, now: datetime, max_age: timedelta) -> bool:
        return self.observed_at is None or now - self.observed_at > max_age

    @property
    def declared(self) -> DeclaredLayout:
        """What the profile declares of the cluster and its pools, worked out once per view object
        (or shared by the builder between views of one profile: `share_declared`)."""
        declared = self._declared
        if declared is None:
            declared = DeclaredLayout(
                (
                    self.name,
                    self.kind,
                    self.region,
                    self.zone,
                    self.failure_domain,
                    self.state,
                    self.suited_for,
                    self.data.model_dump_json(),  # profile models hold lists: their JSON is their value
                    tuple(r.model_dump_json() for r in self.reserved),
                    _frozen(self.labels),
                    tuple(p.declared for p in self.pools),
                )
            )
            object.__setattr__(self, "_declared", declared)
        return declared

    def read_again(self, pools: tuple[PoolView, ...], **reading: Any) -> ClusterView:
        """The same cluster with new read-time facts (its pools' capacity, `observed_at`, the
        reservations it saw...), keeping the declared layout already worked out: `pools` must be
        the same pools with only their capacity changed."""
        again = replace(self, pools=pools, **reading)
        if self._declared is not None:
            share_declared(again, self._declared)
        return again

    def pool(self, name: str) -> PoolView:
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(f"cluster {self.name!r} has no node pool {name!r}")

    @property
    def free_gpus(self) -> int:
        return sum(p.capacity.whole_gpus_free for p in self.pools)


@dataclass(frozen=True, slots=True, weakref_slot=True)
class GlobalView:
    """Every cluster at `taken_at`. Never changed in place: `with_capacity` returns a new view.

    Weakly referable, so the engine can keep what it derived from a view exactly as long as the view.
    """

    taken_at: datetime
    clusters: tuple[ClusterView, ...]
    pools: tuple[PoolView, ...] = field(init=False, repr=False, compare=False)
    _clusters_by_name: dict[str, ClusterView] = field(init=False, repr=False, compare=False)
    _pools_by_key: dict[PoolKey, PoolView] = field(init=False, repr=False, compare=False)
    _capacity_by_ordinal: dict[int, PoolCapacity] = field(init=False, repr=False, compare=False)
    _layout: tuple | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        pools = tuple(p for c in self.clusters for p in c.pools)
        object.__setattr__(self, "pools", pools)
        object.__setattr__(self, "_clusters_by_name", {c.name: c for c in self.clusters})
        object.__setattr__(self, "_pools_by_key", {p.key: p for p in pools})
        object.__setattr__(self, "_capacity_by_ordinal", {p.ordinal: p.capacity for p in pools})

    def age(self, now: datetime) -> timedelta:
        return now - self.taken_at

    @property
    def layout(self) -> tuple:
        """The view without anything a capacity read tells: what the profiles declare, in fleet order.
        Views alike in it share what the engine derives from clusters and pools (plans, static
        scores, verdicts per capacity object: plan_cache.py); worked out once per view.

        A live cluster's pod counts move with every pod that starts, ends or waits, and a read that
        fails leaves its pools without nodes: in the layout, either made a new layout of most reads,
        and the engine learnt the whole fleet again. What a decision reads of a read is keyed where
        it is kept: errors and read times with the cluster verdicts, the fleet's GPUs by type
        (`scarcity`) with the shared plans (candidate_plan.shared_plans), the pods pending (`load`)
        in each of the cluster's pools' capacity (`PoolCapacity.pods_pending`)."""
        layout = self._layout
        if layout is None:
            layout = tuple(c.declared for c in self.clusters)
            object.__setattr__(self, "_layout", layout)
        return layout

    def cluster(self, name: str) -> ClusterView:
        try:
            return self._clusters_by_name[name]
        except KeyError:
            raise KeyError(f"the view has no cluster {name!r}") from None

    def pool(self, cluster: str, pool: str) -> PoolView:
        try:
            return self._pools_by_key[(cluster, pool)]
        except KeyError:
            raise KeyError(f"the view has no node pool {cluster}/{pool}") from None

    def has_cluster(self, name: str) -> bool:
        return name in self._clusters_by_name

    def holds_pod_of(self, cluster: str, reservation_id: str) -> bool:
        """The cluster's read shows a live pod of this reservation, on a node or waiting for one."""
        return self.has_cluster(cluster) and self.cluster(cluster).holds_pod_of(reservation_id)

    @property
    def pools_by_key(self) -> Mapping[PoolKey, PoolView]:
        """Every pool by (cluster, pool name); the view's own index, not to be changed."""
        return self._pools_by_key

    @property
    def capacity_by_ordinal(self) -> Mapping[int, PoolCapacity]:
        """Every pool's free capacity by its fleet position; the view's own index, not to be changed."""
        return self._capacity_by_ordinal

    def has_pool(self, key: PoolKey) -> bool:
        return key in self._pools_by_key

    def free_gpus_by_type(self) -> dict[str, int]:
        """Whole free GPUs per GPU type over the fleet (healthy or not: callers filter)."""
        return self._by_gpu_type(lambda c: c.whole_gpus_free)

    def gpus_by_type(self) -> dict[str, int]:
        """GPUs per GPU type over the fleet, free or not (how many the fleet has of each)."""
        return self._by_gpu_type(lambda c: c.allocatable_gpus)

    def _by_gpu_type(self, count: Callable[[PoolCapacity], int]) -> dict[str, int]:
        totals: dict[str, int] = {}
        for p in self.pools:
            if p.gpu_type:
                totals[p.gpu_type] = totals.get(p.gpu_type, 0) + count(p.capacity)
        return totals

    def with_capacity(self, changes: Mapping[PoolKey, PoolCapacity]) -> GlobalView:
        """A new view with these pools' capacity replaced; untouched clusters are shared, not copied."""
        if not changes:
            return self
        touched = {c for c, _ in changes}
        clusters = []
        for c in self.clusters:
            if c.name in touched:
                pools = tuple(replace(p, capacity=changes[p.key]) if p.key in changes else p for p in c.pools)
                c = c.read_again(pools)
            clusters.append(c)
        return GlobalView(self.taken_at, tuple(clusters))
