"""Simulated time: jobs arrive, the policy places what it can, jobs end and free their nodes.

Events at the same instant are taken together, ends before arrivals. After each instant the policy
is asked once about the pending jobs (again at once if it preempted work). Jobs that cannot fit
anywhere right now, judged from the fleet's per-node maxima, are not offered to the policy, which
only saves time: no policy could place them. The engine is also shown the job at the front of the
queue (by priority, then arrival), so its backfill keeps capacity for it.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from airflow_mcsched.decision import choose_nodes
from airflow_mcsched.replay.fleet import ReplayFleet
from airflow_mcsched.replay.fleet_state import FleetState
from airflow_mcsched.replay.openb import TraceJob
from airflow_mcsched.replay.policies import Placer, accepts, demand_of


@dataclass(frozen=True, slots=True)
class JobRun:
    """Where and when one job ran."""

    job: TraceJob
    start: float
    end: float
    cluster: str
    pool: str
    price_per_gpu_hour: float

    @property
    def wait(self) -> float:
        return self.start - self.job.arrival

    @property
    def cost(self) -> float:
        return self.job.gpu_equivalent * (self.end - self.start) / 3600 * self.price_per_gpu_hour


@dataclass(slots=True)
class ReplayRun:
    """Everything a replay produced: the runs, what never fitted, the allocation integral."""

    policy: str
    total_gpus: int
    runs: list[JobRun] = field(default_factory=list)
    unplaceable: list[TraceJob] = field(default_factory=list)
    preemptions: int = 0
    gpu_seconds: float = 0.0
    """Allocated GPU-seconds while the trace was arriving (first to last arrival)."""
    first_arrival: float = 0.0
    last_arrival: float = 0.0
    last_end: float = 0.0


def fits_empty_fleet(fleet: FleetState, job: TraceJob) -> bool:
    """Could the job run on some node of the empty fleet (its type, its size)?"""
    demand = demand_of(job)
    # PoolView.capacity is the fleet's base capacity: every node empty
    return any(accepts(p, job, demand) and choose_nodes(p.capacity, demand) is not None for p in fleet.pools)


class _Maxima:
    """Per-node maxima over the fleet's GPU pools and all pools, to skip jobs nothing could take now."""

    def __init__(self, fleet: FleetState) -> None:
        gpu = [fleet.capacity[p.key] for p in fleet.pools if p.gpu_type]
        every = list(fleet.capacity.values())
        self.whole = max((c.largest_whole_free_on_node for c in gpu), default=0)
        self.share = max((c.largest_share_free for c in gpu), default=0)
        self.cpu = max((c.largest_cpu_milli_free_on_node for c in every), default=0)
        self.memory = max((c.largest_memory_mib_free_on_node for c in every), default=0)

    def may_fit(self, job: TraceJob) -> bool:
        d = demand_of(job)
        return (
            d.cpu_milli <= self.cpu
            and d.memory_mib <= self.memory
            and d.gpus <= self.whole
            and (not d.gpu_milli or d.gpu_milli <= self.share)
        )


def replay(fleet: ReplayFleet, jobs: Sequence[TraceJob], placer: Placer) -> ReplayRun:
    state = FleetState(fleet)
    out = ReplayRun(placer.name, fleet.total_gpus)
    placeable = []
    for job in jobs:
        (placeable if fits_empty_fleet(state, job) else out.unplaceable).append(job)
    if not placeable:
        return out
    out.first_arrival = placeable[0].arrival
    out.last_arrival = placeable[-1].arrival
    events: list[tuple[float, int, int, str]] = []  # (time, 0 = end / 1 = arrival, seq, job)
    by_name = {j.name: j for j in placeable}
    for i, job in enumerate(placeable):
        heapq.heappush(events, (job.arrival, 1, i, job.name))
    pending: dict[str, TraceJob] = {}
    started_at: dict[str, float] = {}
    end_seq: dict[str, int] = {}  # the end event that counts (a preempted job's old end does not)
    seq = len(placeable)
    last_time = out.first_arrival
    while events:
        now = events[0][0]
        out.gpu_seconds += state.allocated_gpus * max(0.0, min(now, out.last_arrival) - last_time)
        last_time = now
        while events and events[0][0] == now:
            _, kind, event_seq, name = heapq.heappop(events)
            if kind == 1:
                pending[name] = by_name[name]
            elif end_seq.get(name) == event_seq:
                del end_seq[name]
                r = state.end(name)
                out.runs.append(
                    JobRun(by_name[name], started_at.pop(name), now, r.cluster, r.pool, r.price_per_gpu_hour)
                )
        for _ in range(3):  # a preemption frees capacity at once: ask again, a bounded number of times
            if not pending:
                break
            maxima = _Maxima(state)
            offer = [j for j in pending.values() if maxima.may_fit(j)]
            if placer.shown_the_front:
                front = min(pending.values(), key=lambda j: (j.interruptible, j.arrival, j.name))
                if front not in offer:
                    offer.insert(0, front)
            if not offer:
                break
            started, preempted = placer.place(state, offer, now)
            for name in started:
                job = pending.pop(name)
                started_at[name] = now
                seq += 1
                end_seq[name] = seq
                heapq.heappush(events, (now + job.duration, 0, seq, name))
            for name in preempted:
                if name in state.running:
                    state.end(name)
                    started_at.pop(name, None)
                    end_seq.pop(name, None)
                    pending[name] = by_name[name]
                    out.preemptions += 1
            if not preempted:
                break
    out.last_end = last_time
    out.unplaceable.extend(pending.values())  # never placed although they fit an empty fleet
    return out
