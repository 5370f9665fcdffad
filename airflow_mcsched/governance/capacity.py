"""The fleet's capacity now, per cluster and GPU type: free, reserved, fragmentation, and what to distrust.

Free GPUs are the last capacity read minus the reservations whose pods that read does not show
yet (exactly what the engine would see), so a grant is neither forgotten nor counted twice.
Fragmentation is shown as the largest block of whole GPUs free on one node and a histogram of
nodes with at least 1, 2, 4 and 8 GPUs free: 16 free GPUs spread 2 per node cannot take an
8-GPU pod. A cluster is flagged when its last read failed, is older than the policy allows,
never happened, or when it is cordoned or in maintenance.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from airflow_mcsched.access.profiles import ClusterState
from airflow_mcsched.decision import Reservation
from airflow_mcsched.view import ClusterView, GlobalView, PoolKey, PoolView
from airflow_mcsched.view.histogram import DISPLAY_BUCKETS
from airflow_mcsched.view.overlay import CapacityOverlay


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class GpuTypeCapacity(_Frozen):
    gpu_type: str
    pools: tuple[str, ...]
    nodes: int
    """Usable nodes (ready and schedulable) in the last read."""
    nodes_excluded: int
    gpus: int
    """GPUs on usable nodes."""
    gpus_free: int
    """Whole GPUs free, after the reservations whose pods are not running yet."""
    gpus_reserved: float
    """GPUs held by active reservations (running or about to), a share counting as its fraction."""
    gpus_reserved_not_started: float
    """Of those, held by reservations whose pods the cluster does not show yet."""
    largest_free_block: int
    free_histogram: dict[int, int]
    """k -> nodes with at least k whole GPUs free, for k in 1, 2, 4, 8."""
    min_price_per_gpu_hour: float


class ClusterCapacity(_Frozen):
    cluster: str
    state: str
    healthy: bool
    stale: bool
    age_seconds: float | None
    error: str | None
    flags: tuple[str, ...]
    gpus: int
    gpus_free: int
    gpus_reserved: float
    gpu_types: tuple[GpuTypeCapacity, ...]


class CapacityReport(_Frozen):
    taken_at: datetime
    clusters: tuple[ClusterCapacity, ...]
    free_by_gpu_type: dict[str, int]
    """Whole free GPUs per GPU type on clusters that are healthy, fresh and active (what can be used)."""


def _flags(cluster: ClusterView, now: datetime, max_age: timedelta) -> tuple[str, ...]:
    flags = []
    if not cluster.healthy:
        flags.append(f"unhealthy: {cluster.error}")
    age = cluster.age(now)
    if age is None:
        flags.append("never read")
    elif age > max_age:
        flags.append(f"stale: last read {age.total_seconds():.0f}s ago (limit {max_age.total_seconds():.0f}s)")
    if cluster.state is not ClusterState.ACTIVE:
        flags.append(cluster.state.value)
    return tuple(flags)


def _gpu_type_line(
    gpu_type: str,
    pools: list[PoolView],
    overlay: CapacityOverlay,
    held: Mapping[PoolKey, float],
    unseen: Mapping[PoolKey, float],
) -> GpuTypeCapacity:
    caps = [overlay.capacity(p) for p in pools]
    histogram: dict[int, int] = dict.fromkeys(DISPLAY_BUCKETS, 0)
    for c in caps:
        for k, count in c.histogram.buckets().items():
            histogram[k] += count
    return GpuTypeCapacity(
        gpu_type=gpu_type,
        pools=tuple(p.name for p in pools),
        nodes=sum(len(c.nodes) for c in caps),
        nodes_excluded=sum(c.nodes_excluded for c in caps),
        gpus=sum(c.allocatable_gpus for c in caps),
        gpus_free=sum(c.whole_gpus_free for c in caps),
        gpus_reserved=round(sum(held[p.key] for p in pools), 3),
        gpus_reserved_not_started=round(sum(unseen[p.key] for p in pools), 3),
        largest_free_block=max((c.largest_whole_free_on_node for c in caps), default=0),
        free_histogram=histogram,
        min_price_per_gpu_hour=min(p.price_per_gpu_hour for p in pools),
    )


def capacity_now(
    view: GlobalView, reservations: Iterable[Reservation], now: datetime, max_age: timedelta
) -> CapacityReport:
    overlay = CapacityOverlay(view)
    held: dict[PoolKey, float] = defaultdict(float)
    unseen: dict[PoolKey, float] = defaultdict(float)
    for r in reservations:
        if not view.has_pool(r.key):
            continue
        held[r.key] += r.gpu_equivalent
        if not r.pod_visible(view):
            unseen[r.key] += r.gpu_equivalent
            overlay.take(view.pool(*r.key), r.pods, anywhere=True)
    clusters = []
    usable_free: dict[str, int] = defaultdict(int)
    for c in view.clusters:
        by_type: dict[str, list[PoolView]] = defaultdict(list)
        for p in c.pools:
            if p.gpu_type:
                by_type[p.gpu_type].append(p)
        lines = tuple(_gpu_type_line(t, ps, overlay, held, unseen) for t, ps in sorted(by_type.items()))
        flags = _flags(c, now, max_age)
        if not flags:
            for line in lines:
                usable_free[line.gpu_type] += line.gpus_free
        age = c.age(now)
        clusters.append(
            ClusterCapacity(
                cluster=c.name,
                state=c.state.value,
                healthy=c.healthy,
                stale=c.is_stale(now, max_age),
                age_seconds=None if age is None else round(age.total_seconds(), 1),
                error=c.error,
                flags=flags,
                gpus=sum(line.gpus for line in lines),
                gpus_free=sum(line.gpus_free for line in lines),
                gpus_reserved=round(sum(line.gpus_reserved for line in lines), 3),
                gpu_types=lines,
            )
        )
    return CapacityReport(taken_at=view.taken_at, clusters=tuple(clusters), free_by_gpu_type=dict(usable_free))
