"""Which reservations are reclaimed: expired leases, and grants held too long whose pod never started."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from airflow_mcsched.decision import Reason
from airflow_mcsched.governance.reclaim import HeldReservation, find_reclaimable
from tests.decision.fleet_factory import NOW, cluster, observe, reservation, view_of

A = cluster("a")
IDLE_AFTER = timedelta(minutes=30)


def held(rid: str, granted_ago: timedelta, started: bool = False, **kw) -> HeldReservation:
    r = reservation(rid, "a", "gpu", "a-gpu-0", gpus=2, **kw)
    return HeldReservation(replace(r, granted_at=NOW - granted_ago), started)


def test_idle_and_expired_reservations_are_listed_with_their_reason():
    view = view_of((A, observe(A, seen=["rsv-visible"])))
    candidates = find_reclaimable(
        [
            held("idle", timedelta(hours=1)),
            held("young", timedelta(minutes=10)),
            held("started", timedelta(hours=1), started=True),
            held("visible", timedelta(hours=1)),
            held("expired", timedelta(minutes=20), expires_in=timedelta(seconds=-1), started=True),
        ],
        view,
        NOW,
        IDLE_AFTER,
    )
    assert [(c.placement_id, c.reason) for c in candidates] == [
        ("idle", Reason.IDLE_RESERVATION),
        ("expired", Reason.LEASE_EXPIRED),
    ]
    idle = candidates[0]
    assert (idle.gpus, idle.held_seconds, idle.team) == (2.0, 3600.0, "ml")
    assert "pod never started" in idle.message and "idle_reservation_seconds=1800" in idle.message


def test_no_idle_limit_reclaims_only_expired_leases():
    view = view_of(A)
    assert find_reclaimable([held("idle", timedelta(days=1))], view, NOW, None) == []
