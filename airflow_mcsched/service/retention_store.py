"""Purging old history from the metadata DB: final placements past their age with their
reservations, the lists of rejections no placement names any more, and old audit entries.

Safe to run from every API-server replica and from `mcsched purge` at once: each statement deletes
only rows that are final and old (a second run finds them gone), and a placement whose
reservation is somehow still active is kept, since its capacity is still counted. Each purge that
deletes anything leaves an audit entry saying what it deleted and up to when.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import ColumnElement, CursorResult, and_, delete, exists, func, not_, select
from sqlalchemy.orm import Session

from airflow_mcsched.governance.retention import Retention
from airflow_mcsched.service.audit_store import AuditEntry, audit_page
from airflow_mcsched.service.cluster_store import audit
from airflow_mcsched.service.placement_store import take_admission_lock
from airflow_mcsched.service.schemas import PlacementState
from airflow_mcsched.service.tables import AuditRow, Base, PlacementRow, RejectionListRow, ReservationRow, in_pages
from airflow_mcsched.service.visibility import EVERYTHING, Visibility

FINAL_STATES = tuple(s.value for s in PlacementState if s.final)
PURGE_BATCH = 5000
"""Placements one transaction purges at most (`purge_now`): admission cycles wait for the lock a
purge holds, so a first purge of years of history goes in steps, each committed."""
RETENTION_ACTOR = "mcsched-retention"
"""Who the API server's own purges are audited as (`[mcsched] placement_retention`)."""


@dataclass(frozen=True)
class PurgeReport:
    """What a purge deleted (or, in a dry run, would delete)."""

    placements: int
    reservations: int
    rejection_lists: int
    audit_entries: int
    placements_ended_before: datetime | None
    audit_before: datetime | None

    @property
    def anything(self) -> bool:
        return bool(self.placements or self.reservations or self.rejection_lists or self.audit_entries)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def __add__(self, later: PurgeReport) -> PurgeReport:
        """Two steps of one purge (same cutoffs): what both deleted."""
        return replace(
            self,
            placements=self.placements + later.placements,
            reservations=self.reservations + later.reservations,
            rejection_lists=self.rejection_lists + later.rejection_lists,
            audit_entries=self.audit_entries + later.audit_entries,
        )


def _aged_out(before: datetime) -> ColumnElement[bool]:
    """Final placements whose last moment (end, else decision, else queueing) is before `before`,
    and that hold no active reservation."""
    last = func.coalesce(PlacementRow.ended_at, PlacementRow.decided_at, PlacementRow.queued_at)
    holding = exists().where(ReservationRow.placement_id == PlacementRow.id, ReservationRow.active.is_(True))
    return and_(PlacementRow.state.in_(FINAL_STATES), last < before, not_(holding))


def _lists_that_go(placements_before: datetime | None) -> ColumnElement[bool]:
    """Lists of rejections that no placement which stays names."""
    stays = PlacementRow.rejections_digest == RejectionListRow.digest
    if placements_before is not None:
        stays = and_(stays, not_(_aged_out(placements_before)))
    return not_(exists().where(stays))


def _gone(session: Session, table: type[Base], where: ColumnElement[bool], dry_run: bool) -> int:
    """Delete the rows `where` holds (count them, in a dry run); how many."""
    if dry_run:
        return session.scalar(select(func.count()).select_from(table).where(where)) or 0
    result: CursorResult[Any] = session.execute(delete(table).where(where))  # type: ignore[assignment]
    return result.rowcount or 0


def purge(
    session: Session,
    retention: Retention,
    now: datetime,
    actor: str,
    *,
    dry_run: bool = False,
    limit: int | None = None,
) -> PurgeReport:
    """Delete (or, with `dry_run`, count) what `retention` lets go at `now`, at most `limit`
    placements of it; the caller commits."""
    placements_before, audit_before = retention.cutoffs(now)
    if not dry_run:  # one at a time with admission cycles, which name lists and drop unnamed ones
        take_admission_lock(session, now, cycle=False)
    ids: list[str] = []
    if placements_before is not None:
        ids = list(session.scalars(select(PlacementRow.id).where(_aged_out(placements_before)).limit(limit)))
    reservations = 0
    for page in in_pages(ids):  # reservations first: SQLite does not cascade unless told to
        reservations += _gone(session, ReservationRow, ReservationRow.placement_id.in_(page), dry_run)
        _gone(session, PlacementRow, PlacementRow.id.in_(page), dry_run)
    audit_entries = 0 if audit_before is None else _gone(session, AuditRow, AuditRow.at < audit_before, dry_run)
    lists = _gone(session, RejectionListRow, _lists_that_go(placements_before), dry_run)
    report = PurgeReport(len(ids), reservations, lists, audit_entries, placements_before, audit_before)
    if report.anything and not dry_run:
        audit(
            session,
            actor,
            "history.purge",
            "history",
            "placements and audit",
            placements=report.placements,
            reservations=report.reservations,
            rejection_lists=report.rejection_lists,
            audit_entries=report.audit_entries,
            placements_ended_before=None if placements_before is None else placements_before.isoformat(),
            audit_before=None if audit_before is None else audit_before.isoformat(),
        )
    return report


def purge_now(retention: Retention, actor: str = RETENTION_ACTOR, *, dry_run: bool = False) -> PurgeReport:
    """`purge` on the metadata DB in steps of `PURGE_BATCH` placements, each step committed and
    audited (a dry run counts in one step and changes nothing)."""
    from airflow.utils.session import create_session

    now = datetime.now(UTC)  # one cutoff for every step
    total: PurgeReport | None = None
    while True:
        with create_session() as session:
            report = purge(session, retention, now, actor, dry_run=dry_run, limit=None if dry_run else PURGE_BATCH)
            if dry_run:
                session.rollback()
        total = report if total is None else total + report
        if dry_run or report.placements < PURGE_BATCH:
            return total


class RetentionStatus(BaseModel):
    """How long history is kept and the purges that keep it so (`GET /api/v1/retention`): what a reader
    of the lineage or of a cost report needs to know about what is no longer there."""

    placements_kept_seconds: float | None = Field(description="age after which final placements go; None: forever")
    audit_kept_seconds: float | None = Field(description="age after which audit entries go; None: forever")
    placements_ended_before: datetime | None = Field(description="placements that ended before this are purged")
    audit_before: datetime | None = Field(description="audit entries made before this are purged")
    purge_interval_seconds: float = Field(description="each API server purges this often; 0: only `mcsched purge`")
    last_purges: list[AuditEntry] = Field(description="the latest purges that deleted anything, newest first")


def retention_status(
    session: Session,
    retention: Retention,
    purge_interval_seconds: float,
    now: datetime,
    seen: Visibility = EVERYTHING,
    last: int = 5,
) -> RetentionStatus:
    """`retention` at `now`, purged every `purge_interval_seconds` (`ServiceSettings`), with the
    `last` purges the audit trail holds."""
    placements_before, audit_before = retention.cutoffs(now)
    return RetentionStatus(
        placements_kept_seconds=None if retention.placements is None else retention.placements.total_seconds(),
        audit_kept_seconds=None if retention.audit is None else retention.audit.total_seconds(),
        placements_ended_before=placements_before,
        audit_before=audit_before,
        purge_interval_seconds=purge_interval_seconds,
        last_purges=audit_page(session, action="history.purge", limit=last, seen=seen).entries,
    )


def configured_status(session: Session, now: datetime, seen: Visibility = EVERYTHING) -> RetentionStatus:
    """`retention_status` by Airflow's configuration, as every API server purges by it."""
    from airflow_mcsched.service.settings import ServiceSettings

    settings = ServiceSettings.from_airflow_conf()
    return retention_status(session, settings.retention, settings.purge_interval_seconds, now, seen)
