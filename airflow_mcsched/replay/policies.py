"""Placement policies a replay compares: the engine (`mcsched`) and baselines named for what they stand for.

Every baseline picks a cluster (and pool) by its own rule and then leaves the node to the engine's
node chooser (`choose_nodes`, best fit), so only the choice of cluster and pool differs:

- `static`: each team pinned to one cluster (as DAGs with a fixed `kubernetes_conn_id` are);
- `random`: a random cluster where the pod fits (seeded);
- `round-robin`: the next cluster in turn where it fits;
- `most-free`: the cluster with the most free GPUs (Karmada-like spreading);
- `first-fit`: the first cluster in fleet order where it fits (MultiKueue-like);
- `cheapest`: the cheapest pool where it fits (SkyPilot-like);
- `best-fit`: the pool where the pod leaves the fewest GPUs free on its node;
- `pooled`: first fit on one cluster holding every node (the bound no split fleet can beat).

Baselines take the queue in arrival order and skip what does not fit (a default Kubernetes
scheduler's behaviour); `mcsched` runs the engine's admission cycle (priority, fair share, EASY
backfill, scores).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import cached_property
from typing import ClassVar

from airflow_mcsched.access.profiles import WorkKind
from airflow_mcsched.decision import Outcome, PlacementRequest, Policy, Reservation, choose_nodes, decide
from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.decision.request import DataLocation
from airflow_mcsched.replay.fleet_state import FleetState, at
from airflow_mcsched.replay.openb import TraceJob
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import PoolView

REPLAY_POLICY = Policy(
    max_observation_age_seconds=1e12,  # the simulated view is always fresh
    preemption=False,  # baselines never preempt; neither does the engine here, for a fair comparison
    runners_up=0,  # nobody reads explanations in a replay
    aging_seconds=300,  # after 5 minutes' wait a job goes ahead of newer ones (and gets backfill's hold first)
)


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

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    @abstractmethod
    def place(self, fleet: FleetState, pending: Sequence[TraceJob], now: float) -> tuple[list[str], list[str]]: ...


class RuleBasedPlacer(Placer):
    """Arrival order; for each job, the pools its rule lists, the first where the node chooser fits it."""

    def place(self, fleet: FleetState, pending: Sequence[TraceJob], now: float) -> tuple[list[str], list[str]]:
        started = []
        # Capacity only shrinks while one cycle places jobs: a shape that fitted none of its pools
        # will fit none of them for the rest of the cycle (whatever order the rule tries them in).
        # Jobs of one shape share the pools they may use, so a long queue costs one look per shape.
        hopeless: set[tuple] = set()
        eligible = self._eligible
        for job in pending:
            demand = job.demand
            key = (demand, job.gpu_types, self.scope(fleet, job))
            if key in hopeless:
                continue
            pools = eligible.get(key)
            if pools is None:
                pools = eligible[key] = [
                    p for p in fleet.pools if accepts(p, job, demand) and key[2] in (None, p.cluster)
                ]
            pools = [p for p in pools if may_fit(fleet.capacity[p.key], demand)]
            for pool, pods in self.candidates(fleet, job, demand, pools) if pools else ():
                if pods is None:
                    pods = choose_nodes(fleet.capacity[pool.key], demand)
                if pods is not None:
                    fleet.start(reservation_for(fleet, job, pool, pods, now))
                    self.placed(pool)
                    started.append(job.name)
                    break
            else:
                hopeless.add(key)
        return started, []

    def scope(self, fleet: FleetState, job: TraceJob) -> str | None:
        """The one cluster this rule may use for the job; None = any (static: the team's home)."""
        return None

    @cached_property
    def _eligible(self) -> dict[tuple, list[PoolView]]:
        """(shape, GPU types, scope) -> pools that could ever take it: fixed for the fleet, so kept."""
        return {}

    def placed(self, pool: PoolView) -> None:
        """Told where a job went (round-robin remembers it)."""

    @abstractmethod
    def candidates(
        self, fleet: FleetState, job: TraceJob, demand: Demand, pools: list[PoolView]
    ) -> Sequence[tuple[PoolView, tuple[NodeAllocation, ...] | None]]:
        """Pools to try in order, with their pods when the rule had to choose nodes to rank them."""


def _by_cluster(pools: list[PoolView], order: Callable[[str], object]) -> list[tuple[PoolView, None]]:
    return [(p, None) for p in sorted(pools, key=lambda p: (order(p.cluster), p.ordinal))]


class FirstFit(RuleBasedPlacer):
    name = "first-fit"

    def candidates(self, fleet, job, demand, pools):
        return [(p, None) for p in pools]


class Pooled(FirstFit):
    name = "pooled"


class Static(RuleBasedPlacer):
    name = "static"

    def scope(self, fleet, job):
        home = self._homes.get(job.team)
        if home is None:
            home = self._homes[job.team] = fleet.fleet.home_of(job.team)
        return home

    @cached_property
    def _homes(self) -> dict[int, str]:
        return {}

    def candidates(self, fleet, job, demand, pools):
        return [(p, None) for p in pools]


class RandomCluster(RuleBasedPlacer):
    name = "random"

    def candidates(self, fleet, job, demand, pools):
        clusters = sorted({p.cluster for p in pools})
        self.rng.shuffle(clusters)
        rank = {c: i for i, c in enumerate(clusters)}
        return _by_cluster(pools, rank.__getitem__)


class RoundRobin(RuleBasedPlacer):
    name = "round-robin"

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.last: str | None = None

    def candidates(self, fleet, job, demand, pools):
        clusters = [c.name for c in fleet.fleet.profiles]
        start = (clusters.index(self.last) + 1) % len(clusters) if self.last in clusters else 0
        rank = {c: (i - start) % len(clusters) for i, c in enumerate(clusters)}
        return _by_cluster(pools, rank.__getitem__)

    def placed(self, pool):
        self.last = pool.cluster


class MostFree(RuleBasedPlacer):
    name = "most-free"

    def candidates(self, fleet, job, demand, pools):
        free: dict[str, float] = {}
        for p in fleet.pools:
            free[p.cluster] = free.get(p.cluster, 0.0) + fleet.capacity[p.key].gpu_milli_free / 1000
        return _by_cluster(pools, lambda c: -free[c])


class Cheapest(RuleBasedPlacer):
    name = "cheapest"

    def candidates(self, fleet, job, demand, pools):
        return [(p, None) for p in sorted(pools, key=lambda p: (p.price_for(job.interruptible), p.ordinal))]


class BestFit(RuleBasedPlacer):
    name = "best-fit"

    def candidates(self, fleet, job, demand, pools):
        ranked = []
        for p in pools:
            capacity = fleet.capacity[p.key]
            pods = choose_nodes(capacity, demand)
            if pods is not None:
                node = capacity.node(pods[0].node)
                left = node.gpu_milli_free if node is not None else ()
                ranked.append(((sum(left) - demand.gpus * 1000 - demand.gpu_milli, p.ordinal), p, pods))
        ranked.sort(key=lambda t: t[0])
        return [(p, pods) for _, p, pods in ranked]


class Mcsched(Placer):
    """The engine itself: `decide` over the pending queue, with the running jobs as its reservations."""

    name = "mcsched"

    def __init__(self, seed: int = 0, policy: Policy = REPLAY_POLICY) -> None:
        super().__init__(seed)
        self.policy = policy
        self.shown_waiting = policy.backfill_heads if policy.backfill else 0
        self._requests: dict[str, PlacementRequest] = {}

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
