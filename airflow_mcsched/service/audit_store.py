"""The audit trail, queried newest first, one page at a time.

Pages are cut by the entry id (ids only grow), so paging is stable while new entries arrive:
the cursor of a page is the id of its last entry, and the next page starts below it.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import and_, not_, select
from sqlalchemy.orm import Session

from airflow_mcsched.governance.window import ReportParamError
from airflow_mcsched.service.tables import AuditRow
from airflow_mcsched.service.visibility import EVERYTHING, Visibility

MAX_LIMIT = 1000
MAX_CURSOR = 2**31 - 1  # ids are an INTEGER column: a larger cursor cannot be one of ours
_CURSOR = re.compile(r"[0-9]{1,10}")  # ASCII digits only: str.isdigit() also takes '²', which int() refuses


class AuditEntry(BaseModel):
    model_config = ConfigDict(frozen=True, from_attributes=True)

    id: int
    at: datetime
    actor: str
    action: str
    subject_kind: str
    subject: str
    details: dict[str, Any]


class AuditPage(BaseModel):
    entries: list[AuditEntry]
    next_cursor: str | None
    """Pass as `cursor` for the next (older) page; None on the last page."""


def parse_cursor(cursor: str | None) -> int | None:
    if cursor is None or cursor == "":
        return None
    if not _CURSOR.fullmatch(cursor) or int(cursor) > MAX_CURSOR:
        raise ReportParamError("cursor", f"{cursor[:40]!r} is not a cursor; pass the next_cursor of the previous page")
    return int(cursor)


def audit_page(
    session: Session,
    since: datetime | None = None,
    until: datetime | None = None,
    action: str | None = None,
    actor: str | None = None,
    subject: str | None = None,
    limit: int = 100,
    cursor: str | None = None,
    seen: Visibility = EVERYTHING,
) -> AuditPage:
    """Entries in [since, until) matching every filter given, newest first. `action` ending in `*`
    matches a prefix (`placement.*`); the others match exactly. Entries about placements `seen`
    may not read are left out (in the query, so pages stay full and cursors stable)."""
    if not 1 <= limit <= MAX_LIMIT:
        raise ReportParamError("limit", f"{limit} is out of range; ask for 1 to {MAX_LIMIT} entries per page")
    q = select(AuditRow).order_by(AuditRow.id.desc()).limit(limit + 1)
    before = parse_cursor(cursor)
    if before is not None:
        q = q.where(AuditRow.id < before)
    if since is not None:
        q = q.where(AuditRow.at >= since)
    if until is not None:
        q = q.where(AuditRow.at < until)
    if action and action.endswith("*"):
        q = q.where(AuditRow.action.startswith(action[:-1], autoescape=True))
    elif action:
        q = q.where(AuditRow.action == action)
    if actor:
        q = q.where(AuditRow.actor == actor)
    if subject:
        q = q.where(AuditRow.subject == subject)
    hidden = seen.hidden_placement_ids()
    if hidden is not None:
        q = q.where(not_(and_(AuditRow.subject_kind == "placement", AuditRow.subject.in_(hidden))))
    rows = session.scalars(q).all()
    entries = [AuditEntry.model_validate(r) for r in rows[:limit]]
    return AuditPage(entries=entries, next_cursor=str(entries[-1].id) if len(rows) > limit else None)
