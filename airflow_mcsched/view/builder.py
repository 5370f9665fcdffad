"""Build the global view from what operators declared (profiles) and what was read (observations)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from airflow_mcsched.access.capacity import ClusterObservation, NodeObservation
from airflow_mcsched.access.profiles import ClusterProfile, NodePool
from airflow_mcsched.view.capacity_table import capacity_of
from airflow_mcsched.view.node_capacity import NodeCapacity
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import ClusterView, DeclaredLayout, GlobalView, PoolView, share_declared

MAX_PROFILES_REMEMBERED = 4096
"""Profiles whose declared layout is kept (each entry holds its profile, so its id stays its own)."""

_declared_by_profile: dict[int, tuple[ClusterProfile, int, DeclaredLayout]] = {}

MAX_POOLS_REMEMBERED = 65536
"""Pools whose last capacity object is kept for the next read (see `_capacity_of`)."""

_last_capacity: dict[tuple[str, str], PoolCapacity] = {}


def _pool_for(node: NodeObservation, pools: Mapping[str, NodePool], profile: ClusterProfile) -> str | None:
    """The pool a node belongs to: its pool label, else the first pool of its GPU type (CPU pool if none)."""
    if node.pool in pools:
        return node.pool
    for p in profile.node_pools:
        if p.gpu_type == node.gpu_type:
            return p.name
    return None


def node_capacity(node: NodeObservation) -> NodeCapacity:
    return NodeCapacity.of(
        node.name,
        tuple(node.gpu_milli_free),
        node.cpu_milli_allocatable - node.cpu_milli_requested,
        node.memory_mib_allocatable - node.memory_mib_requested,
        node.cpu_milli_allocatable,
        node.memory_mib_allocatable,
    )


def _cluster_view(profile: ClusterProfile, obs: ClusterObservation | None, first_ordinal: int) -> ClusterView:
    by_pool: dict[str, list[NodeCapacity]] = {p.name: [] for p in profile.node_pools}
    excluded: dict[str, int] = dict.fromkeys(by_pool, 0)
    pools = {p.name: p for p in profile.node_pools}
    healthy = obs is not None and obs.error is None
    pending = 0 if obs is None else obs.pods_pending
    if healthy and obs is not None:
        for node in obs.nodes:
            name = _pool_for(node, pools, profile)
            if name is None:
                continue  # a node of a GPU type the profile does not declare: not ours to place on
            if node.usable:
                by_pool[name].append(node_capacity(node))
            else:
                excluded[name] += 1
    views = tuple(
        PoolView(
            cluster=profile.name,
            name=p.name,
            ordinal=first_ordinal + i,
            gpu_type=p.gpu_type,
            gpu_memory_gib=p.gpu_memory_gib,
            gpus_per_node=p.gpus_per_node,
            interconnect=frozenset(p.interconnect),
            has_rdma=p.has_rdma,
            storage_gbps=p.storage_gbps,
            price_per_gpu_hour=p.price_per_gpu_hour,
            spot_price_per_gpu_hour=p.spot_price_per_gpu_hour,
            gpu_sharing=p.gpu_sharing,
            labels=p.labels,
            capacity=_capacity_of(profile.name, p, tuple(by_pool[p.name]), excluded[p.name], pending),
        )
        for i, p in enumerate(profile.node_pools)
    )
    view = ClusterView(
        name=profile.name,
        kind=profile.kind,
        region=profile.region,
        zone=profile.zone,
        failure_domain=profile.domain,
        state=profile.state,
        suited_for=frozenset(profile.suited_for),
        data=profile.data,
        reserved=tuple(profile.reserved),
        labels=profile.labels,
        observed_at=None if obs is None else obs.observed_at,
        error=None if obs is None else obs.error,
        pods_running=0 if obs is None else obs.pods_running,
        pods_pending=pending,
        reservation_ids_seen=frozenset() if obs is None else obs.reservation_ids_seen,
        reservation_ids_waiting=frozenset() if obs is None else obs.reservation_ids_waiting,
        pools=views,
    )
    _share_or_remember_declared(profile, first_ordinal, view)
    return view


def _capacity_of(
    cluster: str, pool: NodePool, nodes: tuple[NodeCapacity, ...], excluded: int, pending: int
) -> PoolCapacity:
    """The pool's capacity; the very object of its last read when this read found its nodes (and its
    cluster's pods pending) as they were, else the object of any earlier read or grant alike in
    content (capacity_table.py). The engine remembers what it worked out per capacity object (node
    choices, scores, its ranking of pools: decision/plan_cache.py), so after a sync that object keeps
    all of that for every pool the sync found unchanged, and only changed pools are judged again."""
    key = (cluster, pool.name)
    last = _last_capacity.get(key)
    if (
        last is not None
        and last.nodes == nodes
        and last.gpus_per_node == pool.gpus_per_node
        and last.nodes_excluded == excluded
        and last.pods_pending == pending
    ):
        return last
    capacity = capacity_of(
        key,
        nodes,
        pool.gpus_per_node,
        excluded,
        pending,
        lambda: PoolCapacity.of(nodes, pool.gpus_per_node, excluded, pods_pending=pending),
    )
    if len(_last_capacity) >= MAX_POOLS_REMEMBERED:
        _last_capacity.clear()
    _last_capacity[key] = capacity
    return capacity


def _share_or_remember_declared(profile: ClusterProfile, first_ordinal: int, view: ClusterView) -> None:
    """Views built from the same (frozen) profile object at the same place share one declared
    layout, so a new capacity read costs no re-deriving of what the profile says (snapshot.py)."""
    known = _declared_by_profile.get(id(profile))
    if known is not None and known[0] is profile and known[1] == first_ordinal:
        share_declared(view, known[2])
        return
    if len(_declared_by_profile) >= MAX_PROFILES_REMEMBERED:
        _declared_by_profile.clear()
    _declared_by_profile[id(profile)] = (profile, first_ordinal, view.declared)


def build_view(
    profiles: Iterable[ClusterProfile],
    observations: Mapping[str, ClusterObservation] | Iterable[ClusterObservation],
    taken_at: datetime,
) -> GlobalView:
    """One snapshot of the fleet. A cluster without an observation is in the view with no capacity.

    An unhealthy read (observation with `error`) keeps the cluster visible with its error and no
    capacity, so a decision can say why it was skipped. Observations of unknown clusters are ignored.
    """
    if not isinstance(observations, Mapping):
        observations = {o.cluster: o for o in observations}
    clusters = []
    ordinal = 0
    for profile in profiles:
        view = _cluster_view(profile, observations.get(profile.name), ordinal)
        ordinal += len(view.pools)
        clusters.append(view)
    return GlobalView(taken_at, tuple(clusters))
