"""Long runs of a fleet that moves as a live one does (`benchmarks/memory_soak.py`): every cycle
decided with the engine's memory equals the same cycle decided with none, through grants, work
ending, lapsed leases, preemptions, drifting reads and pods that show late."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_mcsched.decision import Policy, pool_ranking
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
