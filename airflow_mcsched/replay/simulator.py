"""Simulated time: jobs arrive, the policy places what it can, jobs end and free their nodes.

Events at the same instant are taken together, ends before arrivals. After each instant the policy
is asked once about the pending jobs (again at once if it preempted work). Jobs that could not
start anywhere right now even alone are not offered to the policy, which only saves time: no
policy could place them. Like the Kubernetes scheduler's unschedulable queue, a job offered and
left waiting is offered again only once capacity has been freed (a job ended or was preempted):
arrivals alone never make room. That is exact for the baselines; for the engine it may, rarely,
delay a start by one instant (a new arrival taking the backfill head could let a parked job in).
The engine is also shown the jobs at the front of the queue (by priority, then arrival; as many as
its backfill holds room for), and the first jobs asking 2 GPUs or more (as many as it holds room
for beyond those), so its backfill keeps capacity for them.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from airflow_mcsched.decision import choose_nodes
from airflow_mcsched.replay.datasets import NO_STAGING, Staging
from airflow_mcsched.replay.fleet import ReplayFleet
from airflow_mcsched.replay.fleet_state import FleetState
from airflow_mcsched.replay.openb import TraceJob
from airflow_mcsched.replay.placer import Placer, accepts, may_fit, queue_order


@dataclass(frozen=True, slots=True)
class JobRun:
    """Where and when one job ran."""

    job: TraceJob
    start: float
    end: float
    cluster: str
    pool: str
    price_per_gpu_hour: float
    staging: Staging = NO_STAGING

    @property
    def wait(self) -> float:
        return self.start - self.job.arrival

    @property
    def cost(self) -> float:
        """GPU time (staging included: the GPUs are held while data arrives) plus the egress bill."""
        compute = self.job.gpu_equivalent * (self.end - self.start) / 3600 * self.price_per_gpu_hour
        return compute + self.staging.egress_dollars


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
    demand = job.demand
    # PoolView.capacity is the fleet's base capacity: every node empty
    return any(accepts(p, job, demand) and choose_nodes(p.capacity, demand) is not None for p in fleet.pools)


class _StartableNow:
    """Which jobs could start now, each alone: some pool it accepts has a node that fits it.

    Asked once per shape (demand and GPU types) per instant, with the pools' cheap per-node maxima
    first and the node chooser only where they pass. A job that fails this test waits under every
    policy, so it is not offered (the engine would only explain, at length, that it waits).
    """

    def __init__(self, fleet: FleetState) -> None:
        self.fleet = fleet
        self.known: dict[tuple, bool] = {}

    def __call__(self, job: TraceJob) -> bool:
        key = (job.demand, job.gpu_types)
        answer = self.known.get(key)
        if answer is None:
            demand, fleet = job.demand, self.fleet
            answer = self.known[key] = any(
                accepts(p, job, demand)
                and may_fit(fleet.capacity[p.key], demand)
                and choose_nodes(fleet.capacity[p.key], demand) is not None
                for p in fleet.pools
            )
        return answer


def replay(fleet: ReplayFleet, jobs: Sequence[TraceJob], placer: Placer) -> ReplayRun:
    state = FleetState(fleet)
    out = ReplayRun(placer.name, fleet.total_gpus)
    placeable: list[TraceJob] = []
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
    parked: set[str] = set()  # offered since capacity was last freed, and still waiting
    while events:
        now = events[0][0]
        freed = False
        out.gpu_seconds += state.allocated_gpus * max(0.0, min(now, out.last_arrival) - last_time)
        last_time = now
        while events and events[0][0] == now:
            _, kind, event_seq, name = heapq.heappop(events)
            if kind == 1:
                pending[name] = by_name[name]
            elif end_seq.get(name) == event_seq:
                del end_seq[name]
                freed = True
                r = state.end(name)
                job = by_name[name]
                staging = fleet.staging(job, r.cluster)
                out.runs.append(
                    JobRun(job, started_at.pop(name), now, r.cluster, r.pool, r.price_per_gpu_hour, staging)
                )
        if freed:
            parked.clear()
        for _ in range(3):  # a preemption frees capacity at once: ask again, a bounded number of times
            if not pending:
                break
            startable = _StartableNow(state)
            offer = [j for j in pending.values() if j.name not in parked and startable(j)]
            if placer.shown_waiting or placer.shown_large:
                front = heapq.nsmallest(placer.shown_waiting, pending.values(), key=queue_order)
                if placer.shown_large:
                    large = (j for j in pending.values() if j.demand.is_large and placer.waited_for_large_hold(j, now))
                    # as many as it could hold room for: those at the front may be large ones too
                    front += heapq.nsmallest(placer.shown_waiting + placer.shown_large, large, key=queue_order)
                offered = {j.name for j in offer}
                shown = []
                for j in front:  # a job may be in both lists
                    if j.name not in offered:
                        offered.add(j.name)
                        shown.append(j)
                offer[:0] = shown
            if not offer:
                break
            started, preempted = placer.place(state, offer, now)
            for name in started:
                job = pending.pop(name)
                started_at[name] = now
                seq += 1
                end_seq[name] = seq
                end = now + fleet.staging(job, state.running[name].cluster).seconds + job.duration
                heapq.heappush(events, (end, 0, seq, name))
            for name in preempted:
                if name in state.running:
                    state.end(name)
                    started_at.pop(name, None)
                    end_seq.pop(name, None)
                    pending[name] = by_name[name]
                    out.preemptions += 1
            parked.update(j.name for j in offer if j.name in pending)
            if not preempted:
                break
            parked.clear()
    out.last_end = last_time
    out.unplaceable.extend(pending.values())  # never placed although they fit an empty fleet
    return out
