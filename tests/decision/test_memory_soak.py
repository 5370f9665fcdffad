"""Long runs of a fleet that moves as a live one does (`benchmarks/memory_soak.py`): every cycle
decided with the engine's memory equals the same cycle decided with none, through grants, work
ending, lapsed leases, preemptions, drifting reads and pods that show late."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from airflow_mcsched.decision import Policy, candidates, pool_ranking
from airflow_mcsched.decision.reasons import Reason
from benchmarks.governed_fleet import governed_policy
from benchmarks.memory_soak import MemoryChangedADecision, live_fleet, soak

pytestmark = pytest.mark.usefixtures("fresh_memory")

STEP = timedelta(seconds=120)


@pytest.mark.parametrize("seed", range(3))
def test_a_live_fleet_decides_alike_with_and_without_the_memory(seed):
    figures = list(soak(live_fleet(8, seed, queue=80, new_per_cycle=24), 30, Policy(), STEP))
    assert len(figures) == 30
    # the run went through what the memory must follow: grants, waits, lapsed leases, and a fleet
    # that fills up, where high priorities stop interruptible work
    assert sum(f.admitted for f in figures) > 500
    assert sum(f.waiting for f in figures) > 1000
    assert sum(f.reclaimed for f in figures) > 50
    assert sum(f.victims for f in figures) > 0
    assert figures[-1].running > 5 * figures[0].running


def test_a_ranking_that_misses_changed_capacity_is_caught(monkeypatch):
    """The check can fail: rankings that resume without looking again at pools whose capacity
    changed since (a memory bug) decide otherwise than the engine with nothing kept, and the soak
    names the cycle and the request."""
    monkeypatch.setattr(pool_ranking.PoolRanking, "_stale", lambda self, overlay, judged: [])
    with pytest.raises(MemoryChangedADecision, match=r"cycle \d+, at .*: request "):
        for _ in soak(live_fleet(8, 0, queue=80, new_per_cycle=24), 30, Policy(), STEP):
            pass


@pytest.mark.parametrize("seed", range(2))
def test_a_governed_fleet_decides_alike_with_and_without_the_memory(seed):
    """Quotas and borrowing, GPUs kept for some, spread groups, failure domains, cost ceilings, weight
    overrides, aging, failed, old and cordoned clusters (benchmarks/governed_fleet.py): the verdicts
    that read the team, the cycle's grants or the clock."""
    fleet = live_fleet(8, seed, queue=80, new_per_cycle=24, governed=True)
    figures = list(soak(fleet, 30, governed_policy(fleet.profiles), STEP))
    named = sum((f.reasons for f in figures), Counter())
    governed = [
        Reason.QUOTA_EXCEEDED,
        Reason.RESERVED_FOR_PRIORITY,
        Reason.FAILURE_DOMAIN_EXCLUDED,
        Reason.COST_CEILING,
        Reason.INSUFFICIENT_GPU_MEMORY,
        Reason.CLUSTER_CORDONED,
        Reason.CLUSTER_STALE,
        Reason.CLUSTER_UNHEALTHY,
    ]
    assert all(named[r.value] > 0 for r in governed), named
    assert sum(f.victims for f in figures) > 0


def test_a_scan_shared_across_teams_is_caught_by_the_governed_soak(monkeypatch):
    """A memory bug that only governed requests meet: sharing a waiting request's scan with requests
    alike in demand even where a team's quota or kept GPUs judged it (those verdicts are the team's).
    The plain soak has no such verdicts; the governed one names the request in the first cycles."""
    monkeypatch.setattr(candidates, "_fits_nowhere_key", lambda ctx, setup: setup.fit_key)
    fleet = live_fleet(8, 0, queue=80, new_per_cycle=24, governed=True)
    with pytest.raises(MemoryChangedADecision, match=r"cycle \d+, at .*: request "):
        for _ in soak(fleet, 30, governed_policy(fleet.profiles), STEP):
            pass
