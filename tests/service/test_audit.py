"""The audit trail: what is recorded (policy changes, cluster health) and how it is queried."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from airflow_mcsched.decision import Policy, TeamQuota
from airflow_mcsched.governance.window import ReportParamError
from airflow_mcsched.service.audit_store import audit_page
from airflow_mcsched.service.cluster_store import ClusterStore
from airflow_mcsched.service.placement_store import PlacementStore
from airflow_mcsched.service.status_store import StatusStore
from airflow_mcsched.service.tables import AuditRow
from tests.decision.fleet_factory import observe
from tests.service.test_placement_store import FLEET

T0 = datetime(2026, 1, 5, 12, tzinfo=UTC)


def entry(i: int, action: str, actor: str = "user:admin", subject: str = "s") -> AuditRow:
    return AuditRow(at=T0 + timedelta(minutes=i), actor=actor, action=action, subject_kind="x", subject=subject,
                    details={"i": i})  # fmt: skip


@pytest.fixture
def trail(metadata_session_factory):
    with metadata_session_factory() as s:
        for i in range(10):
            s.add(entry(i, "placement.admit" if i % 2 else "cluster.update", subject=f"s{i % 3}"))
            s.flush()  # ids in time order
        s.add(entry(10, "reservation.reclaim", actor="mcsched-reclaim"))
    return metadata_session_factory


def test_newest_first_in_pages_that_chain_by_cursor(trail):
    seen, cursor = [], None
    with trail() as s:
        while True:
            page = audit_page(s, limit=4, cursor=cursor)
            seen += [e.details["i"] for e in page.entries]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    assert seen == list(range(10, -1, -1))


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"action": "placement.admit"}, [9, 7, 5, 3, 1]),
        ({"action": "placement.*"}, [9, 7, 5, 3, 1]),
        ({"actor": "mcsched-reclaim"}, [10]),
        ({"subject": "s0"}, [9, 6, 3, 0]),
        ({"since": T0 + timedelta(minutes=3), "until": T0 + timedelta(minutes=6)}, [5, 4, 3]),
        ({"action": "cluster.update", "subject": "s1"}, [4]),
    ],
)
def test_filters_combine(trail, filters, expected):
    with trail() as s:
        assert [e.details["i"] for e in audit_page(s, **filters).entries] == expected


@pytest.mark.parametrize(("kw", "field"), [({"cursor": "abc"}, "cursor"), ({"limit": 0}, "limit")])
def test_bad_paging_names_the_field(trail, kw, field):
    with trail() as s, pytest.raises(ReportParamError) as err:
        audit_page(s, **kw)
    assert err.value.field == field


def test_a_policy_change_is_recorded_once_with_the_quotas_that_changed(metadata_session_factory):
    before = Policy()
    after = Policy(quotas=(TeamQuota(team="nlp", nominal={"*": 8}),))
    with metadata_session_factory() as s:
        for policy in (before, before, after, after):
            PlacementStore(s, policy).run_cycle(T0)
    with metadata_session_factory() as s:
        changes = s.scalars(select(AuditRow).where(AuditRow.action == "policy.change").order_by(AuditRow.id)).all()
    assert len(changes) == 2 and changes[0].actor == "mcsched-policy"
    assert changes[1].details["quotas"] == [{"team": "nlp", "nominal": {"*": 8.0}, "cohort": None,
                                             "borrowing_limit": None}]  # fmt: skip
    assert changes[1].details["changes"]["quotas"][0] == []


def test_a_cluster_turning_unhealthy_and_back_is_recorded(metadata_session_factory):
    profile = FLEET.cluster("cloud-h100")
    with metadata_session_factory() as s:
        ClusterStore(s).apply(FLEET, "test")
        status = StatusStore(s)
        status.record(observe(profile, at=T0))
        status.record(observe(profile, at=T0 + timedelta(seconds=15)))
        status.record(observe(profile, at=T0 + timedelta(seconds=30), error="connection refused"))
        status.record(observe(profile, at=T0 + timedelta(seconds=45)))
    with metadata_session_factory() as s:
        page = audit_page(s, action="cluster.health")
    assert [(e.actor, e.details["healthy"], e.details["error"]) for e in page.entries] == [
        ("mcsched-sync", True, None),
        ("mcsched-sync", False, "connection refused"),
    ]
