"""The baselines a replay holds the engine against, named for what they stand for.

Every baseline picks a cluster (and pool) by its own rule and then leaves the node to the engine's
node chooser (`choose_nodes`, best fit), so only the choice of cluster and pool differs:

- `static`: each team pinned to one cluster (as DAGs with a fixed `kubernetes_conn_id` are);
- `random`: a random cluster where the pod fits (seeded);
- `round-robin`: the next cluster in turn where it fits;
- `most-free`: the cluster with the most free GPUs (Karmada-like spreading);
- `first-fit`: the first cluster in fleet order where it fits (MultiKueue-like);
- `cheapest`: the cheapest pool where it fits (SkyPilot-like);
- `best-fit`: the pool where the pod leaves the fewest GPUs free on its node;
- `pooled`: first fit on one cluster holding every node (a reference, not a bound).

Baselines take the queue as a Kubernetes scheduler does (`placer.queue_order`: priority, then
arrival) and never preempt. By default they skip what does not fit and hold no room for a blocked
job. With `backfill=True` (`mcsched replay --baseline-backfill`) each one runs plain EASY backfill,
as a batch scheduler such as Slurm does: the first job in queue order that cannot start (the head)
gets a start time held on the pool where running work's expected ends free room for it soonest,
and a later job starts only where it does not delay that start (it ends first, or the head still
fits beside it). The hold is the engine's own `HeadReservation`, so both judge "does not delay" alike.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import cached_property
from itertools import groupby

from airflow_mcsched.decision import choose_nodes
from airflow_mcsched.decision.backfill import HeadReservation
from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.replay.fleet_state import FleetState, at
from airflow_mcsched.replay.openb import TraceJob
from airflow_mcsched.replay.placer import Placer, accepts, may_fit, queue_order, reservation_for
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.snapshot import PoolView


class RuleBasedPlacer(Placer):
    """Queue order; for each job, the pools its rule lists, the first where the node chooser fits it
    (and, with backfill, where it does not delay the head's held start)."""

    takes_plain_backfill = True

    def __init__(self, seed: int = 0, backfill: bool = False) -> None:
        super().__init__(seed)
        self.backfill = backfill
        # the simulator shows the first jobs of the queue even when they fit nowhere, so the head is
        # the first blocked job in queue order (as the engine's backfill heads are)
        self.shown_waiting = 4 if backfill else 0
        self._hold: HeadReservation | None = None
        self._never: set[str] = set()  # jobs no order of ends lets start in their pools: never a head

    def place(self, fleet: FleetState, pending: Sequence[TraceJob], now: float) -> tuple[list[str], list[str]]:
        started: list[str] = []
        # Capacity only shrinks while one cycle places jobs: a shape that fitted none of its pools
        # will fit none of them for the rest of the cycle (whatever order the rule tries them in).
        # Jobs of one shape share the pools they may use, so a long queue costs one look per shape.
        hopeless: set[tuple] = set()
        eligible = self._eligible
        head_seen = False
        for job in sorted(pending, key=queue_order):
            demand = job.demand
            key = (demand, job.gpu_types, self.scope(fleet, job))
            pools = eligible.get(key)
            if pools is None:
                pools = eligible[key] = [
                    p for p in fleet.pools if accepts(p, job, demand) and key[2] in (None, p.cluster)
                ]
            outcome = "no room" if key in hopeless else self._start(fleet, job, pools, now, head_seen)
            if outcome == "started":
                started.append(job.name)
            elif outcome == "no room":
                hopeless.add(key)
                if self.backfill and not head_seen:
                    head_seen = self._make_head(fleet, job, pools, now)
        return started, []

    def _start(self, fleet: FleetState, job: TraceJob, pools: list[PoolView], now: float, head_seen: bool) -> str:
        """ "started", "held back" (only the head's hold stood in the way) or "no room"."""
        demand, hold, held_back = job.demand, self._hold, False
        fitting = [p for p in pools if may_fit(fleet.capacity[p.key], demand)]
        for pool, pods in self.candidates(fleet, job, demand, fitting) if fitting else ():
            if pods is None:
                pods = choose_nodes(fleet.capacity[pool.key], demand)
            if pods is None:
                continue
            reservation = reservation_for(fleet, job, pool, pods, now)
            if hold is not None:
                if job.name == hold.request_id:
                    self._hold = None  # the head starts
                elif hold.allows(pool, pods, reservation.expected_end):
                    hold.commit(pool, pods, reservation.expected_end)
                elif head_seen:  # behind the head in the queue: it must not delay the head
                    held_back = True
                    continue
                else:  # ahead of the head: it goes first, and the head's start is found again
                    self._hold = None
            fleet.start(reservation)
            self.placed(pool)
            return "started"
        return "held back" if held_back else "no room"

    def _make_head(self, fleet: FleetState, job: TraceJob, pools: list[PoolView], now: float) -> bool:
        """The first blocked job in queue order becomes the head, with its hold (kept while it stays the
        head, every later start committed to it); False if it can never start in its pools."""
        if self._hold is not None and self._hold.request_id == job.name:
            return True
        if job.name in self._never:
            return False
        hold = _earliest_hold(fleet, job, pools, now)
        if hold is None:
            self._never.add(job.name)
            return False
        self._hold = hold
        return True

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


def _earliest_hold(fleet: FleetState, job: TraceJob, pools: list[PoolView], now: float) -> HeadReservation | None:
    """The first instant at which the running work's expected ends leave room for `job` on one of
    `pools` (ties: fleet order), held there until its own expected end; None if it never fits."""
    by_key = {p.key: p for p in pools}
    ends = sorted(
        (max(r.expected_end, at(now)), r.id, r.key, r.pods) for r in fleet.running.values() if r.key in by_key
    )
    capacity = {k: fleet.capacity[k] for k in by_key}
    for when, group in groupby(ends, key=lambda e: e[0]):
        freed = set()
        for _, _, pool_key, pods in group:
            capacity[pool_key] = capacity[pool_key].give_back(pods)
            freed.add(pool_key)
        for pool in sorted((by_key[k] for k in freed), key=lambda p: p.ordinal):
            if choose_nodes(capacity[pool.key], job.demand) is not None:
                runs_for = timedelta(seconds=fleet.fleet.staging(job, pool.cluster).seconds + job.duration)
                return HeadReservation(job.name, pool, when, job.demand, capacity[pool.key], when + runs_for)
    return None


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

    def __init__(self, seed: int = 0, backfill: bool = False) -> None:
        super().__init__(seed, backfill)
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
