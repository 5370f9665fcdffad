"""What one admission cycle knows and changes as it walks the queue: capacity handed out, quota used."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from airflow_mcsched.access.profiles import WorkKind
from airflow_mcsched.decision import plan_cache
from airflow_mcsched.decision.plan_cache import Change, SharedPlans, plan_memory
from airflow_mcsched.decision.policy import Policy, ScoreWeights
from airflow_mcsched.decision.pool_stamps import ClockStamp, WorkStamp
from airflow_mcsched.decision.quota import QuotaLedger, use_of
from airflow_mcsched.decision.reservation import Reservation
from airflow_mcsched.decision.running_work import RunningWork
from airflow_mcsched.decision.work_base import next_base
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.bounded_table import get_or_make
from airflow_mcsched.view.overlay import CapacityOverlay
from airflow_mcsched.view.snapshot import GlobalView, PoolKey, PoolView

if TYPE_CHECKING:
    from airflow_mcsched.decision.admission import Plugins
    from airflow_mcsched.decision.backfill import HeldRoom
    from airflow_mcsched.decision.outcome import Rejection
    from airflow_mcsched.decision.pool_ranking import PoolRanking
    from airflow_mcsched.decision.preemption import SearchMemo


class CycleState:
    """The view with tentative allocations, the quota ledger, and the work running or granted so far.

    Free capacity = the view's free capacity minus active reservations whose pods the view does not
    show yet; a reservation whose pod shows is already counted by the view and is not taken twice.
    """

    def __init__(
        self,
        view: GlobalView,
        active: dict[str, Reservation],
        policy: Policy,
        now: datetime,
        plugins: Plugins,
    ) -> None:
        self.view = view
        self.policy = policy
        self.now = now
        self.dollar_scores = plugins.dollar_scores
        self.max_observation_age = policy.max_observation_age
        self.memory = plan_memory(view, policy, plugins)
        self.memory.trim()  # before anything of the cycle reads it
        self.overlay = CapacityOverlay(view)
        self.memory.work = base = next_base(self.memory.work, active)
        # `partial`, not a bound method of this state: no reference cycle for the collector to find
        self.running = RunningWork(base, partial(_domain_of, view), self.memory.stamps, base.held(view))
        self.pool_stamps: dict[int, tuple[WorkStamp, ClockStamp]] = {}
        """By fleet position: what per-cycle scores read of the pool now (`stamps`), while its work is unchanged."""
        self.granted_ids: set[str] = set()
        self.head: HeldRoom | None = None  # set by admission: the backfill reservation of the first blocked request
        self._quota: QuotaLedger | None = None
        self.teams_with_quota = frozenset(q.team for q in policy.quotas)
        self.any_reserved = self.memory.any_reserved
        # what the candidate search shares with other cycles on this view (see plan_cache.py):
        # `shared` is set with the cluster verdicts when the first request needs them
        self.cluster_verdicts: dict[str, Rejection | None] | None = None
        self.shared: SharedPlans | None = None
        self._fleet_gpus: dict[str, int] | None = None
        self.staging_memo = self.memory.staging
        # and what only this cycle may use: it depends on the grants and the running work
        self.rankings: dict[tuple, PoolRanking] = {}
        self.pool_searches: dict[tuple, SearchMemo] = {}  # pool searches of requests alike (preemption.py)
        self.victims_below: dict[tuple, tuple] = {}  # by pool and priority, while its work is unchanged (preemption.py)
        # a team short of quota's victims by GPU type and priority, while the work is unchanged (preemption.py)
        self.cohort_victims: dict[tuple, tuple] = {}
        # GPUs kept for others by cluster, GPU type, team and class, while the work is unchanged (entitlement.py)
        self.held_for_others: dict[tuple, tuple] = {}
        self.end_events: dict[PoolKey, tuple[int, list]] = {}  # by pool, while its work is unchanged (backfill.py)
        memory = self.memory
        deferred, keys = self.running.base.unseen(view)
        for key, (_, taken) in zip(keys, deferred, strict=True):  # one copy per pool, made when first read
            pool = view.pools_by_key[key]
            self.overlay.defer(pool, partial(memory.changed, key, pool.capacity, taken, Change.TAKE_UNSEEN))
        self.capacity_state = memory.first_capacity_state(view, deferred)
        """The overlay's capacity objects as one token (`PlanMemory.first_capacity_state`): a ranking
        that starts where an earlier one left the pools skips looking for changed ones when it is
        the token that one was left at (pool_ranking.py)."""

    def _pool(self, key: PoolKey) -> PoolView | None:
        return self.view.pools_by_key.get(key)

    def fleet_gpus(self) -> dict[str, int]:
        """The view's GPUs by type, free or not, in the order of the fleet (`scarcity` reads them, and
        the shared plans are keyed by them: candidate_plan.shared_plans); counted once per cycle."""
        if self._fleet_gpus is None:
            self._fleet_gpus = self.view.gpus_by_type()
        return self._fleet_gpus

    @property
    def quota(self) -> QuotaLedger:
        """Use per team and GPU type, built from running work the first time anything asks."""
        if self._quota is None:
            # the base's sums, kept from cycle to cycle, while the cycle has not changed its work
            used = self.running.base.used() if not self.running.log else use_of(self.running.values())
            self._quota = QuotaLedger(self.policy.quotas, used)
        return self._quota

    # -- changes -----------------------------------------------------------------------------
    def grant(self, r: Reservation) -> None:
        """A new reservation of this cycle: later requests see its capacity and quota as used."""
        self.granted_ids.add(r.id)
        self.running.add(r)
        if self._quota is not None:
            self._quota.add(r.team, r.gpu_type, r.gpu_equivalent)
        pool = self._pool(r.key)
        if pool is not None:
            self.pool_stamps.pop(pool.ordinal, None)
            self._change(pool, r.pods, Change.TAKE)

    def evict(self, r: Reservation) -> None:
        """A preemption victim: its capacity and quota are free for the request that preempts it."""
        if not self.running.remove(r):
            return
        self.quota.remove(r.team, r.gpu_type, r.gpu_equivalent)
        pool = self._pool(r.key)
        if pool is not None:
            self.pool_stamps.pop(pool.ordinal, None)
            self._change(pool, r.pods, Change.GIVE_BACK)

    def hold_for(self, pool: PoolView, pods: tuple[NodeAllocation, ...], team: str, gpus: float) -> None:
        """Keep capacity freed by preemption for the preemptor until its next cycle admits it."""
        self._change(pool, pods, Change.TAKE)
        self.quota.add(team, pool.gpu_type, gpus)

    def _change(self, pool: PoolView, pods: tuple[NodeAllocation, ...], how: Change) -> None:
        """Take (or give back) capacity in the overlay, through the view's memory of such changes."""
        capacity = self.memory.changed(pool.key, self.overlay.capacity(pool), pods, how)
        self.overlay.set_capacity(pool, capacity)
        self.capacity_state = self.memory.capacity_state_after(self.capacity_state, pool.ordinal, capacity)

    # -- reading -----------------------------------------------------------------------------
    def running_in(self, key: PoolKey) -> Iterable[Reservation]:
        return self.running.in_pool(key)

    def stamps(self, pool: PoolView) -> tuple[WorkStamp, ClockStamp]:
        """What per-cycle scores read of the pool now: its running work's ends, and those at this
        cycle's clock (pool_stamps.py). A verdict stamped with either holds."""
        stamps = self.pool_stamps.get(pool.ordinal)
        if stamps is None:
            work = self.running.ends_stamp(pool.key)
            stamps = self.pool_stamps[pool.ordinal] = (work, work.at(self.now))
        return stamps

    def weights_for(self, team: str, kind: WorkKind, stake_level: int) -> ScoreWeights:
        """The policy's weights for this team and kind, staked by `stake_level` (`Policy.stake_level`),
        one object per team, kind and level for as long as the view lives (request signatures name
        them by identity)."""
        key = (team, kind, stake_level)
        weights = self.memory.weights.get(key)
        if weights is None:
            weights = self.policy.weights_for(team, kind).staked(stake_level, self.dollar_scores)
            self.memory.weights[key] = weights
        return weights

    def data_holders(self, location: str) -> tuple[str, ...]:
        """Clusters holding a dataset or path, looked up once per view."""
        clusters = self.view.clusters
        # new paths keep coming: bounded like the stagings made of them
        return get_or_make(
            self.memory.data_sources,
            location,
            plan_cache.MAX_STAGINGS,
            lambda: tuple(c.name for c in clusters if c.data.holds(location)),
        )


def _domain_of(view: GlobalView, cluster: str) -> str | None:
    return view.cluster(cluster).failure_domain if view.has_cluster(cluster) else None
