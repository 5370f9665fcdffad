"""Utilisation per cluster, waiting time per team, quota use: hand-computed cases."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_mcsched.decision import TeamQuota
from airflow_mcsched.governance.quota_use import quota_use
from airflow_mcsched.governance.usage import PlacementUsage
from airflow_mcsched.governance.utilisation import utilisation
from airflow_mcsched.governance.waiting import nearest_rank, waiting_times
from airflow_mcsched.governance.window import TimeWindow
from tests.decision.fleet_factory import reservation
from tests.governance.lineage_cases import CLUSTER_GPUS, DAY, NOW, at, usages


def test_utilisation_splits_capacity_into_used_reserved_and_free():
    window = TimeWindow(at(8), at(14))  # only 08:00-13:30 has happened by NOW: 5.5 h x 8 GPUs = 44 GPU-h
    lines = {u.cluster: u for u in utilisation(usages(), window, CLUSTER_GPUS, NOW)}
    c1, c2 = lines["c1"], lines["c2"]
    assert (c1.capacity_gpu_hours, c1.used_gpu_hours, c1.reserved_gpu_hours) == (44.0, 7.0, 1.0)  # p1 waited 0.5 h x 2
    assert c1.free_gpu_hours == 36.0 and c1.used_share == pytest.approx(7 / 44, abs=1e-6)
    assert (c2.used_gpu_hours, c2.reserved_gpu_hours, c2.free_gpu_hours) == (3.0, 0.0, 41.0)  # p2 2 + p5 1


def test_a_cluster_deleted_since_still_shows_its_use_without_capacity():
    lines = {u.cluster: u for u in utilisation(usages(), TimeWindow(DAY, NOW), {"c1": 8}, NOW)}
    assert (lines["c2"].gpus, lines["c2"].capacity_gpu_hours, lines["c2"].used_share) == (0, 0.0, None)


def queued(team: str, waited_s: float, state: str = "released", minute: int = 0) -> PlacementUsage:
    q = at(10) + timedelta(minutes=minute)
    admitted = None if state == "pending" else q + timedelta(seconds=waited_s)
    return PlacementUsage(f"{team}-{minute}", team, None, "d", state, q, 1.0, admitted_at=admitted)


def test_waiting_time_per_team_mean_p95_max_and_the_still_pending():
    data = [queued("a", 60, minute=1), queued("a", 120, minute=2), queued("a", 600, minute=3),
            queued("b", 30), queued("b", 0, state="pending", minute=30)]  # fmt: skip
    lines = {w.team: w for w in waiting_times(data, TimeWindow(DAY, at(11)), NOW)}
    a, b = lines["a"], lines["b"]
    assert (a.admitted, a.mean_seconds, a.p95_seconds, a.max_seconds, a.pending) == (3, 260.0, 600.0, 600.0, 0)
    assert (b.admitted, b.pending, b.longest_pending_seconds) == (1, 1, 1800.0)  # queued 10:30, window ends 11:00


def test_nearest_rank_p95_is_a_wait_that_happened():
    assert nearest_rank(list(range(1, 101)), 0.95) == 95
    assert nearest_rank([5.0], 0.95) == 5.0


def test_quota_use_counts_like_the_engine_and_shows_borrowing_and_unlimited_teams():
    quotas = [TeamQuota(team="ml", nominal={"A100": 8}, cohort="research"),
              TeamQuota(team="cv", nominal={"*": 4})]  # fmt: skip
    held = [
        reservation("r1", "c1", "gpu", "n0", gpus=8, team="ml"),
        reservation("r2", "c1", "gpu", "n1", gpus=2, team="ml"),
        reservation("r3", "c1", "t4", "n2", gpus=3, team="cv", gpu_type="T4"),
        reservation("r4", "c1", "l4", "n3", gpus=1, team="ops", gpu_type="L4"),
    ]
    lines = {(q.team, q.gpu_type): q for q in quota_use(quotas, held)}
    ml = lines[("ml", "A100")]
    assert (ml.used, ml.nominal, ml.borrowed, ml.cohort, ml.used_share) == (10.0, 8.0, 2.0, "research", 1.25)
    assert (lines[("cv", "*")].used, lines[("cv", "*")].borrowed) == (3.0, 0.0)
    assert (lines[("ops", "L4")].used, lines[("ops", "L4")].nominal) == (1.0, None)
