"""Reclaim on real metadata DBs: idle grants and expired leases free capacity the engine then uses,
each with an audit entry by `mcsched-reclaim`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from airflow_mcsched.decision import Policy, Reason
from airflow_mcsched.service.cluster_store import ClusterStore
from airflow_mcsched.service.placement_store import PlacementStore
from airflow_mcsched.service.report_store import ReportStore
from airflow_mcsched.service.schemas import PlacementState
from airflow_mcsched.service.status_store import StatusStore
from airflow_mcsched.service.tables import AuditRow
from tests.decision.fleet_factory import observe
from tests.service.test_placement_store import FLEET, submit

H100 = ["NVIDIA-H100-80GB-HBM3"]
POLICY = Policy(idle_reservation_seconds=1800)
T0 = datetime.now(UTC).replace(microsecond=0)


@pytest.fixture
def db(metadata_session_factory):
    with metadata_session_factory() as s:
        ClusterStore(s).apply(FLEET, "test")
        for profile in FLEET.clusters:
            StatusStore(s).record(observe(profile, at=T0))
    return metadata_session_factory


def queue(db, task: str, when: datetime, policy: Policy = POLICY):
    """Submit a whole H100 node's worth and run a cycle; the one node of cloud-h100 fits one at a time."""
    with db() as s:
        store = PlacementStore(s, policy)
        row = store.submit(submit(task, gpus=8, gpu_types=H100), "test", when)
        store.run_cycle(when)
        return row.id, row.state


def keep_renewing(db, placement_id: str, until: datetime, policy: Policy = POLICY) -> None:
    """The task keeps its lease alive (as a waiting operator does) but never starts its pod."""
    t = T0
    while t < until:
        t += timedelta(minutes=10)
        with db() as s:
            PlacementStore(s, policy).renew(placement_id, t)


def cycle_at(db, when: datetime, policy: Policy = POLICY) -> None:
    with db() as s:
        StatusStore(s).record(observe(FLEET.cluster("cloud-h100"), at=when))  # a fresh read: no pod shows
        PlacementStore(s, policy).run_cycle(when)


def reclaims(db) -> list[AuditRow]:
    with db() as s:
        return s.scalars(select(AuditRow).where(AuditRow.action == "reservation.reclaim")).all()


def test_an_idle_reservation_is_listed_then_reclaimed_and_the_waiting_request_gets_its_gpus(db):
    idle, state = queue(db, "holder", T0)
    waiting, waiting_state = queue(db, "waiter", T0 + timedelta(minutes=1))
    assert (state, waiting_state) == ("admitted", "pending")
    later = T0 + timedelta(minutes=31)
    keep_renewing(db, idle, later)
    with db() as s:
        StatusStore(s).record(observe(FLEET.cluster("cloud-h100"), at=later))
        (candidate,) = ReportStore(s).reclaimable(POLICY, later)
    assert (candidate.placement_id, candidate.reason, candidate.gpus) == (idle, Reason.IDLE_RESERVATION, 8.0)

    cycle_at(db, later)

    with db() as s:
        store = PlacementStore(s, POLICY)
        assert store.get(idle).state == PlacementState.EXPIRED.value
        assert store.get(idle).end_reason.startswith("IdleReservation: held 8 GPUs")
        assert (store.get(waiting).state, store.get(waiting).cluster) == ("admitted", "cloud-h100")
    (entry,) = reclaims(db)
    assert (entry.actor, entry.subject, entry.details["reason"], entry.details["gpus_freed"]) == (
        "mcsched-reclaim", idle, "IdleReservation", 8.0,
    )  # fmt: skip


def test_a_started_reservation_is_not_idle_however_long_it_runs(db):
    running, _ = queue(db, "holder", T0)
    with db() as s:
        PlacementStore(s, POLICY).start(running, "pod-1", T0 + timedelta(minutes=1))
    keep_renewing(db, running, T0 + timedelta(hours=2))
    cycle_at(db, T0 + timedelta(hours=2))
    with db() as s:
        assert PlacementStore(s, POLICY).get(running).state == PlacementState.RUNNING.value
    assert reclaims(db) == []


def test_without_an_idle_limit_only_the_lease_decides(db):
    never = Policy(idle_reservation_seconds=None)
    held, _ = queue(db, "holder", T0, never)
    keep_renewing(db, held, T0 + timedelta(hours=2), never)
    cycle_at(db, T0 + timedelta(hours=2), never)
    with db() as s:
        assert PlacementStore(s, never).get(held).state == PlacementState.ADMITTED.value


def test_an_expired_lease_is_reclaimed_by_mcsched_reclaim_with_the_gpus_freed(db):
    lapsed, _ = queue(db, "holder", T0)
    waiting, _ = queue(db, "waiter", T0 + timedelta(minutes=1))
    cycle_at(db, T0 + POLICY.lease + timedelta(seconds=1))
    (entry,) = reclaims(db)
    assert (entry.actor, entry.subject, entry.details["reason"], entry.details["gpus_freed"]) == (
        "mcsched-reclaim", lapsed, "LeaseExpired", 8.0,
    )  # fmt: skip
    with db() as s:
        assert PlacementStore(s, POLICY).get(waiting).state == PlacementState.ADMITTED.value
