"""One request as the plugins see it: the request, its demand in capacity units, and the cycle's state."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from airflow_mcsched.decision.cycle_state import CycleState
from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.decision.policy import Policy, ScoreWeights
from airflow_mcsched.decision.request import PlacementRequest


@dataclass(slots=True, eq=False)
class RequestContext:
    """Computed once per request per cycle, so filters and scores do not redo the arithmetic.

    Read-only by convention, not frozen: one is made for every request of every cycle, and a frozen
    dataclass is twice as slow to make."""

    request: PlacementRequest
    demand: Demand
    priority: int
    weights: ScoreWeights
    duration: timedelta
    hours: float
    gpu_hours: float
    """GPUs (in whole-GPU equivalents) x expected hours: what the work will use."""
    stake_level: int
    """`Policy.stake_level` of those GPU-hours: how much more its dollar scores weigh."""
    cycle: CycleState

    @classmethod
    def of(cls, request: PlacementRequest, priority: int, cycle: CycleState) -> RequestContext:
        policy = cycle.policy
        duration = policy.expected_duration(request.kind, request.expected_duration)
        demand = Demand.of(request)
        hours = duration.total_seconds() / 3600
        gpu_hours = demand.gpu_equivalent * hours
        stake_level = policy.stake_level(gpu_hours)
        weights = cycle.weights_for(request.team, request.kind, stake_level)
        # positional, in field order: one is made for every request of every cycle
        return cls(request, demand, priority, weights, duration, hours, gpu_hours, stake_level, cycle)

    @property
    def signature(self) -> tuple:
        """What lasting filters and static scores may depend on; requests alike in these share their work.

        Not in it: id, arrival, deadline, project, team, priority class, spread group (only dynamic
        filters may read those). Team and kind enter through the weights they select.
        """
        r = self.request
        return (
            self.demand,
            r.gpu_types,
            r.min_gpu_memory_gib,
            r.kind,
            self.duration,
            r.interruptible,
            r.data,
            r.needs_rdma,
            r.needs_fast_storage,
            r.failure_domains,
            r.avoid_failure_domains,
            r.avoid_clusters,
            r.max_cost_per_hour,
            id(self.weights),
        )

    @property
    def policy(self) -> Policy:
        return self.cycle.policy

    @property
    def now(self) -> datetime:
        return self.cycle.now

    @property
    def expected_end(self) -> datetime:
        return self.cycle.now + self.duration
