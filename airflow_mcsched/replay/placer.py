"""What every replay policy shares: the placer's interface, what a pool accepts whatever is free on
it, the cheap per-node check, the reservation a started job holds, and the queue's order.

The queue's order is the one a Kubernetes scheduler keeps (its `PrioritySort` queue plugin) and
Kueue's queues keep: priority, then arrival. In a replay a pod's priority is its trace QoS: `LS`
(latency-sensitive) pods before `BE` (best-effort, interruptible) ones.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from airflow_mcsched.decision import Reservation
from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.replay.fleet_state import FleetState, at
from airflow_mcsched.replay.openb import TraceJob
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import PoolView


def queue_order(job: TraceJob) -> tuple[bool, float, str]:
    """Sort key of the queue: latency-sensitive before best-effort, then by arrival."""
    return (job.interruptible, job.arrival, job.name)


def accepts(pool: PoolView, job: TraceJob, demand: Demand) -> bool:
    """GPU type and sharing: what a pool must offer whatever is free on it."""
    if not demand.needs_gpu:
        return True
    if pool.gpu_type is None or (job.gpu_types and pool.gpu_type not in job.gpu_types):
        return False
    return pool.gpu_sharing or not demand.gpu_milli


def may_fit(capacity: PoolCapacity, demand: Demand) -> bool:
    """Per-node maxima of the pool allow the pod (necessary, cheap; the node chooser decides)."""
    return (
        capacity.largest_whole_free_on_node >= demand.gpus
        and capacity.largest_share_free >= demand.gpu_milli
        and capacity.largest_cpu_milli_free_on_node >= demand.cpu_milli
        and capacity.largest_memory_mib_free_on_node >= demand.memory_mib
    )


def reservation_for(
    fleet: FleetState, job: TraceJob, pool: PoolView, pods: tuple[NodeAllocation, ...], now: float
) -> Reservation:
    """The running job as the engine sees it: it ends after its data is staged and its trace run time."""
    end = now + fleet.fleet.staging(job, pool.cluster).seconds + job.duration
    return Reservation(
        id=f"rsv-{job.name}",
        request_id=job.name,
        cluster=pool.cluster,
        pool=pool.name,
        pods=pods,
        team=f"team-{job.team}",
        priority=0 if job.interruptible else 100,
        interruptible=job.interruptible,
        price_per_gpu_hour=pool.price_for(job.interruptible),
        granted_at=at(now),
        expires_at=at(end + 3600),
        expected_end=at(end),
        gpu_type=pool.gpu_type,
        priority_class="low" if job.interruptible else "normal",
    )


class Placer(ABC):
    """Places what it can of the pending jobs now; returns the jobs started and the jobs preempted."""

    name: ClassVar[str]
    shown_waiting: int = 0
    """Offered this many jobs at the front of the queue even when they fit nowhere now (so backfill
    can hold room for them)."""
    takes_plain_backfill: ClassVar[bool] = False
    """`mcsched replay --baseline-backfill` makes it with `backfill=True` (plain EASY backfill): the
    baselines' option; the engine holds room by its own policy instead."""
    shown_large: int = 0
    """And the first `shown_waiting` + this many jobs asking 2 GPUs or more, wherever they are in the
    queue (backfill holds room for more large jobs than for small ones)."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def waited_for_large_hold(self, job: TraceJob, now: float) -> bool:
        """Has this large job waited long enough to count for `shown_large`? A placer that shows
        large jobs says by its own rule (the engine's: `Policy.waited_for_large_hold`)."""
        return True

    @abstractmethod
    def place(self, fleet: FleetState, pending: Sequence[TraceJob], now: float) -> tuple[list[str], list[str]]: ...
