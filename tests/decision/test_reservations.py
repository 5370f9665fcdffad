"""Reservations count as used until released or expired, never twice, never forgotten."""

from __future__ import annotations

from datetime import timedelta

from airflow_mcsched.decision import Outcome, Reason, decide
from tests.decision.fleet_factory import (
    DEFAULT_POLICY,
    NOW,
    cluster,
    decide_one,
    observe,
    pool,
    request,
    reservation,
    view_of,
)

PROFILE = cluster("a", pool(nodes=1))


def test_reservation_whose_pod_is_not_seen_yet_takes_capacity():
    view = view_of(PROFILE)
    held = reservation("early", "a", "gpu", "a-gpu-0", gpus=8)
    assert decide_one(view, request(gpus=1), [held]).outcome is Outcome.WAITING


def test_reservation_is_not_counted_twice_once_its_pod_shows():
    """The read already shows the pod (4 GPUs used) and its reservation id: 4 are still free."""
    view = view_of((PROFILE, observe(PROFILE, free={"gpu": [4]}, seen=["rsv-early"])))
    held = reservation("early", "a", "gpu", "a-gpu-0", gpus=4)
    assert decide_one(view, request(gpus=4), [held]).outcome is Outcome.ADMITTED


def test_expired_lease_is_reclaimed_and_its_capacity_is_free_again():
    view = view_of(PROFILE)
    lapsed = reservation("late", "a", "gpu", "a-gpu-0", gpus=8, expires_in=timedelta(seconds=-1))
    result = decide(view, [request(gpus=8)], [lapsed], DEFAULT_POLICY, NOW)
    assert result.decisions[0].outcome is Outcome.ADMITTED
    (reclaimed,) = result.reclaimed
    assert (reclaimed.reservation_id, reclaimed.reason) == ("rsv-late", Reason.LEASE_EXPIRED)
    assert "before its pod appeared" in reclaimed.message


def test_expired_lease_of_a_running_pod_is_reported_but_the_pod_still_holds_its_gpus():
    view = view_of((PROFILE, observe(PROFILE, free={"gpu": [0]}, seen=["rsv-late"])))
    lapsed = reservation("late", "a", "gpu", "a-gpu-0", gpus=8, expires_in=timedelta(seconds=-1))
    result = decide(view, [request(gpus=1)], [lapsed], DEFAULT_POLICY, NOW)
    assert "still runs" in result.reclaimed[0].message
    assert result.decisions[0].outcome is Outcome.WAITING


def test_admission_hands_out_a_reservation_with_a_lease():
    decision = decide_one(view_of(PROFILE), request("r9", gpus=2, expected_duration=timedelta(hours=3)))
    r = decision.reservation
    assert (r.id, r.request_id, r.cluster, r.pool, r.nodes) == ("rsv-r9", "r9", "a", "gpu", ("a-gpu-0",))
    assert r.expires_at == NOW + DEFAULT_POLICY.lease
    assert r.expected_end == NOW + timedelta(hours=3)
    assert (r.team, r.priority, r.priority_class, r.gpu_type, r.gpu_equivalent) == ("ml", 100, "normal", "A100", 2)


def test_queue_sees_what_earlier_requests_in_the_same_cycle_took():
    result = decide(view_of(PROFILE), [request("r1", gpus=6), request("r2", gpus=4)], [], DEFAULT_POLICY, NOW)
    assert [d.outcome for d in result.decisions] == [Outcome.ADMITTED, Outcome.WAITING]
    assert [r.request_id for r in result.reservations] == ["r1"]


def test_reservation_on_a_pool_that_left_the_fleet_is_ignored_for_capacity():
    held = reservation("old", "gone", "gpu", "gone-gpu-0", gpus=8)
    assert decide_one(view_of(PROFILE), request(gpus=8), [held]).outcome is Outcome.ADMITTED
