"""History past its age goes (final placements with their reservations, lists of rejections no one
names, old audit entries), on SQLite and PostgreSQL; queued, admitted and running work never goes,
a dry run counts exactly what a purge deletes, and every purge is audited."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from airflow.exceptions import AirflowConfigException
from sqlalchemy import func, select

from airflow_mcsched.cli.main import main
from airflow_mcsched.governance.retention import Retention, describe_age, parse_age
from airflow_mcsched.service import retention_store
from airflow_mcsched.service.background import BackgroundWork
from airflow_mcsched.service.placement_store import PlacementStore
from airflow_mcsched.service.retention_store import purge
from airflow_mcsched.service.schemas import PlacementState
from airflow_mcsched.service.settings import ServiceSettings
from airflow_mcsched.service.tables import AdmissionLockRow, AuditRow, PlacementRow, ReservationRow
from tests.service.test_placement_store import POLICY, db, now, place, submit  # noqa: F401  (db is a fixture)
from tests.service.test_rejection_lists import H100, _lists

MONTH = timedelta(days=30)
L4, T4 = "NVIDIA-L4", "Tesla-T4"


@pytest.mark.parametrize(
    ("text", "age"),
    [
        ("90d", timedelta(days=90)),
        (" 12h ", timedelta(hours=12)),
        ("2w", timedelta(weeks=2)),
        ("3600s", timedelta(hours=1)),
    ],
)
def test_ages_are_a_number_and_a_unit(text, age):
    assert parse_age(text, "placement_retention") == age


@pytest.mark.parametrize(
    ("age", "text"),
    [
        (timedelta(days=180), "180 days"),
        (timedelta(weeks=52), "52 weeks"),
        (timedelta(days=1), "1 day"),
        (timedelta(hours=36), "36 hours"),
        (timedelta(minutes=90), "90 minutes"),
        (timedelta(seconds=3601), "3601 seconds"),
    ],
)
def test_an_age_is_told_in_the_largest_whole_unit(age, text):
    assert describe_age(age) == text


@pytest.mark.parametrize(
    ("text", "says"),
    [("ninety days", "write a whole number and a unit"), ("90", "unit"), ("-3d", "unit"), ("30m", "at least 1h")],
)
def test_a_bad_age_names_its_field_and_the_fix(text, says):
    with pytest.raises(ValueError, match="placement_retention") as err:
        parse_age(text, "placement_retention")
    assert says in str(err.value)


def _release(db, placement_id: str, when) -> None:  # noqa: F811
    with db() as s:
        PlacementStore(s, POLICY).release(placement_id, "succeeded", "", when, "test")
        s.commit()


def _counts(db) -> dict[str, int]:  # noqa: F811
    with db() as s:
        return {
            "placements": s.scalar(select(func.count()).select_from(PlacementRow)),
            "reservations": s.scalar(select(func.count()).select_from(ReservationRow)),
            "audit": s.scalar(select(func.count()).select_from(AuditRow)),
        }


def test_final_placements_past_their_age_go_and_work_still_held_or_queued_stays(db):  # noqa: F811
    long_ago = now() - 2 * MONTH
    old_running = place(db, submit("old-running", gpus=8, gpu_types=[H100]))  # never released
    old_waiting = place(db, submit("old-waiting", gpus=8, gpu_types=[H100]))  # queued behind it
    old_done = place(db, submit("old-done", gpus=1, gpu_types=[L4]))
    _release(db, old_done.id, now())
    recent = place(db, submit("recent", gpus=1))
    _release(db, recent.id, now())
    odd = place(db, submit("odd", gpus=1, gpu_types=[T4]))
    with db() as s:  # all but `recent` as if queued (and ended) two months ago
        for placement in (old_running, old_waiting, old_done, odd):
            row = s.get(PlacementRow, placement.id)
            row.queued_at = row.decided_at = long_ago
            row.ended_at = row.ended_at and long_ago
        # a final placement whose reservation still counts: kept until that is mended
        s.get(PlacementRow, odd.id).state = PlacementState.FAILED.value
        s.get(PlacementRow, odd.id).ended_at = long_ago
        s.add(AuditRow(at=long_ago, actor="alice", action="cluster.update", subject_kind="cluster", subject="x"))
        s.commit()
    assert (old_running.state, old_waiting.state) == (PlacementState.ADMITTED, PlacementState.PENDING)
    named, _ = _lists(db)
    old_list = named[old_done.id]
    assert old_list is not None and old_list not in {d for p, d in named.items() if p != old_done.id}
    before = _counts(db)
    with db() as s:
        cycles = s.scalar(select(AdmissionLockRow.cycles))

    retention = Retention(placements=MONTH, audit=MONTH)
    with db() as s:
        dry = purge(s, retention, now(), "test", dry_run=True)
        s.rollback()
    assert _counts(db) == before and _lists(db)[0] == named  # a dry run changes nothing
    with db() as s:
        done = purge(s, retention, now(), "test")
        s.commit()
    assert (done.placements, done.reservations, done.rejection_lists, done.audit_entries) == (1, 1, 1, 1)
    assert (dry.placements, dry.reservations, dry.rejection_lists, dry.audit_entries) == (1, 1, 1, 1)

    named, held = _lists(db)  # nothing dangles, nothing leaks
    assert set(named) == {old_waiting.id, old_running.id, recent.id, odd.id} and old_list not in held
    with db() as s:
        assert s.get(PlacementRow, old_waiting.id).state == PlacementState.PENDING.value
        assert s.get(PlacementRow, old_running.id).state == PlacementState.ADMITTED.value
        entries = s.scalars(select(AuditRow).where(AuditRow.action == "history.purge")).all()
        assert [(e.actor, e.details["placements"], e.details["audit_entries"]) for e in entries] == [("test", 1, 1)]
        assert s.scalar(select(AdmissionLockRow.cycles)) == cycles  # it took the lock, but is no cycle
    # one placement and its reservation gone; one old audit entry gone, the purge's own added
    assert _counts(db) == {"placements": 4, "reservations": 3, "audit": before["audit"]}

    with db() as s:  # nothing left to go: nothing deleted, nothing audited
        again = purge(s, retention, now(), "test")
        s.commit()
    assert not again.anything and _counts(db)["audit"] == before["audit"]


def test_without_ages_nothing_goes(db):  # noqa: F811
    done = place(db, submit("done", gpus=1), now() - 12 * MONTH)
    _release(db, done.id, now() - 12 * MONTH)
    with db() as s:
        report = purge(s, Retention(), now(), "test")
        s.commit()
    assert not report.anything and _counts(db)["placements"] == 1


@pytest.fixture
def mcsched(capsys, monkeypatch):
    monkeypatch.delenv("AIRFLOW__MCSCHED__PLACEMENT_RETENTION", raising=False)
    monkeypatch.delenv("AIRFLOW__MCSCHED__AUDIT_RETENTION", raising=False)

    def run(*args: str, code: int = 0) -> str:
        assert main(list(args)) == code
        out, err = capsys.readouterr()
        return out if code == 0 else err

    return run


def test_the_command_counts_then_purges_and_refuses_without_an_age(airflow_lineage, mcsched, monkeypatch):
    from airflow.utils.session import create_session

    from tests.governance.lineage_cases import placement_rows

    assert "nothing to purge: give --placements-older-than" in mcsched("purge", code=2)
    assert "at least 1h" in mcsched("purge", "--placements-older-than", "5m", code=2)
    with create_session() as s:
        final = s.scalar(select(func.count()).select_from(PlacementRow).where(PlacementRow.ended_at.is_not(None)))
    assert 0 < final < len(placement_rows())  # the lineage holds running work too, which stays

    dry = json.loads(mcsched("purge", "--placements-older-than", "1d", "--dry-run", "--format", "json"))
    assert dry["dry_run"] and dry["placements"] == final
    monkeypatch.setenv("AIRFLOW__MCSCHED__PLACEMENT_RETENTION", "1d")  # the configured age, with no flag
    monkeypatch.setattr(retention_store, "PURGE_BATCH", 2)  # in steps, each committed and audited
    assert mcsched("purge").startswith(f"purged {final} placement(s) ended before ")
    with create_session() as s:
        left = s.scalars(select(PlacementRow.state)).all()
        steps = s.scalars(select(AuditRow).where(AuditRow.action == "history.purge")).all()
    assert len(left) == len(placement_rows()) - final and not any(PlacementState(x).final for x in left)
    assert len(steps) == -(-final // 2) and {e.actor for e in steps} == {"mcsched-purge"}
    assert sum(e.details["placements"] for e in steps) == final


def test_the_api_server_purges_on_its_own_when_history_has_an_age(airflow_lineage):
    from airflow.utils.session import create_session

    settings = ServiceSettings(
        sync_enabled=False,
        admission_interval_seconds=0,
        retention=Retention(placements=timedelta(days=1)),
        retention_interval_seconds=0.05,
    )
    work = BackgroundWork(settings).start()
    try:
        assert [t.name for t in work.threads] == ["mcsched-retention"]
        purged = threading.Event()
        for _ in range(200):
            with create_session() as s:
                if s.scalars(select(AuditRow).where(AuditRow.action == "history.purge")).first() is not None:
                    purged.set()
                    break
            purged.wait(0.05)
        assert purged.is_set()
        with create_session() as s:
            assert s.scalar(select(AuditRow.actor).where(AuditRow.action == "history.purge")) == "mcsched-retention"
    finally:
        work.shutdown()
    assert not BackgroundWork(ServiceSettings(sync_enabled=False, admission_interval_seconds=0)).start().threads


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, Retention()),
        ({"placement_retention": "90d"}, Retention(placements=timedelta(days=90))),
        ({"placement_retention": "", "audit_retention": "52w"}, Retention(audit=timedelta(weeks=52))),
    ],
)
def test_history_ages_are_read_from_the_airflow_configuration(monkeypatch, options, expected):
    for key in ("placement_retention", "audit_retention"):
        monkeypatch.delenv(f"AIRFLOW__MCSCHED__{key.upper()}", raising=False)
    for key, value in options.items():
        monkeypatch.setenv(f"AIRFLOW__MCSCHED__{key.upper()}", value)
    assert ServiceSettings.from_airflow_conf().retention == expected


def test_a_bad_configured_age_stops_the_service_with_the_option_named(monkeypatch):
    monkeypatch.setenv("AIRFLOW__MCSCHED__PLACEMENT_RETENTION", "ninety days")
    with pytest.raises(
        AirflowConfigException,
        match=r"\[mcsched\] placement_retention is 'ninety days'.*AIRFLOW__MCSCHED__PLACEMENT_RETENTION",
    ):
        ServiceSettings.from_airflow_conf()
