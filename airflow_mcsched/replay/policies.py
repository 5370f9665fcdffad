"""The replay's policies by name: the engine (`mcsched`) and the baselines (`replay/baselines.py`).

`mcsched` runs the engine's admission cycle (priority, fair share, EASY backfill, scores) with the
replay's policy. The engine's runs depend on this module and not on `baselines.py`, so a change to
a baseline leaves the engine's kept runs valid (`replay/run_store.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from airflow_mcsched.access.profiles import WorkKind
from airflow_mcsched.decision import Outcome, PlacementRequest, Policy, decide
from airflow_mcsched.decision.request import DataLocation
from airflow_mcsched.replay.baselines import (
    BestFit,
    Cheapest,
    FirstFit,
    MostFree,
    Pooled,
    RandomCluster,
    RoundRobin,
    Static,
)
from airflow_mcsched.replay.fleet_state import FleetState, at
from airflow_mcsched.replay.openb import TraceJob
from airflow_mcsched.replay.placer import Placer, reservation_for

REPLAY_POLICY = Policy(
    max_observation_age_seconds=1e12,  # the simulated view is always fresh
    preemption=False,  # baselines never preempt; neither does the engine here, for a fair comparison
    runners_up=0,  # nobody reads explanations in a replay
    aging_seconds=300,  # after 5 minutes' wait a job goes ahead of newer ones (and gets backfill's hold first)
)


class Mcsched(Placer):
    """The engine itself: `decide` over the pending queue, with the running jobs as its reservations."""

    name = "mcsched"

    def __init__(self, seed: int = 0, policy: Policy = REPLAY_POLICY) -> None:
        super().__init__(seed)
        self.policy = policy
        self.shown_waiting = policy.backfill_heads if policy.backfill else 0
        self.shown_large = policy.backfill_large_heads if policy.backfill else 0
        self._requests: dict[str, PlacementRequest] = {}

    def waited_for_large_hold(self, job: TraceJob, now: float) -> bool:
        return self.policy.waited_for_large_hold(at(job.arrival), at(now))

    def request_of(self, job: TraceJob) -> PlacementRequest:
        request = self._requests.get(job.name)
        if request is None:
            request = self._requests[job.name] = PlacementRequest(
                id=job.name,
                arrival=at(job.arrival),
                team=f"team-{job.team}",
                kind=WorkKind.BATCH,
                gpus=job.gpus,
                gpu_milli=job.gpu_milli if job.gpus else 0,
                gpu_types=job.gpu_types,
                cpu=job.cpu_milli / 1000,
                memory_gib=max(job.memory_mib, 1) / 1024,  # the trace has pods asking no memory
                expected_duration=timedelta(seconds=job.duration),
                interruptible=job.interruptible,
                priority_class="low" if job.interruptible else "normal",
                data=(DataLocation(location=job.dataset, size_gib=job.data_gib),) if job.data_gib else (),
            )
        return request

    def place(self, fleet: FleetState, pending: Sequence[TraceJob], now: float) -> tuple[list[str], list[str]]:
        jobs = {j.name: j for j in pending}
        result = decide(
            fleet.view(at(now)),
            [self.request_of(j) for j in pending],
            list(fleet.running.values()),
            self.policy,
            at(now),
        )
        started = []
        for d in result.decisions:
            if d.outcome is Outcome.ADMITTED and d.reservation is not None:
                job = jobs[d.request_id]
                r = d.reservation
                # the job runs as long as the trace says, whatever lease the engine granted
                fleet.start(reservation_for(fleet, job, fleet.pool_view(r.cluster, r.pool), r.pods, now))
                started.append(job.name)
        return started, [v.request_id for v in result.preemptions]


PLACERS: dict[str, type[Placer]] = {
    p.name: p for p in (Mcsched, Static, RandomCluster, RoundRobin, MostFree, FirstFit, Cheapest, BestFit, Pooled)
}
