"""Utilisation per cluster over a window: GPU-hours used, reserved but not running, and free.

Capacity is the cluster's GPUs as its node pools declare them (nodes x GPUs per node) times the
hours of the window that have passed (time still ahead is not "free" yet). Used = pods running;
reserved = admitted but the pod not started yet (see `PlacementUsage`); free = the rest. A
cluster deleted since still shows the use it had, with no capacity.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from airflow_mcsched.governance.cost import DIGITS
from airflow_mcsched.governance.usage import PlacementUsage
from airflow_mcsched.governance.window import TimeWindow


class ClusterUtilisation(BaseModel):
    model_config = ConfigDict(frozen=True)

    cluster: str
    gpus: int
    capacity_gpu_hours: float
    used_gpu_hours: float
    reserved_gpu_hours: float
    free_gpu_hours: float
    used_share: float | None
    """used / capacity; None when the cluster has no declared GPUs."""


def utilisation(
    usages: Iterable[PlacementUsage], window: TimeWindow, cluster_gpus: Mapping[str, int], now: datetime
) -> list[ClusterUtilisation]:
    """One line per cluster (declared or seen in the lineage), by name."""
    past = window.until_now(now)
    used: dict[str, float] = defaultdict(float)
    reserved: dict[str, float] = defaultdict(float)
    if past is not None:
        for u in usages:
            if u.cluster:
                used[u.cluster] += u.gpu_hours_in(past, now)
                reserved[u.cluster] += u.reserved_gpu_hours_in(past, now)
    lines = []
    for cluster in sorted(set(cluster_gpus) | set(used)):
        gpus = cluster_gpus.get(cluster, 0)
        capacity = gpus * (past.hours if past else 0.0)
        u, r = used[cluster], reserved[cluster]
        lines.append(
            ClusterUtilisation(
                cluster=cluster,
                gpus=gpus,
                capacity_gpu_hours=round(capacity, DIGITS),
                used_gpu_hours=round(u, DIGITS),
                reserved_gpu_hours=round(r, DIGITS),
                free_gpu_hours=round(max(0.0, capacity - u - r), DIGITS),
                used_share=round(u / capacity, DIGITS) if capacity > 0 else None,
            )
        )
    return lines
