"""The audit trail (who did what, when), the reservations due to be reclaimed, and how long history is kept."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from airflow_mcsched.governance.reclaim import ReclaimCandidate
from airflow_mcsched.governance.window import parse_instant
from airflow_mcsched.service.audit_store import MAX_LIMIT, AuditPage, audit_page
from airflow_mcsched.service.auth import VisibilityDep
from airflow_mcsched.service.policy_source import current_policy
from airflow_mcsched.service.retention_store import RetentionStatus, configured_status
from airflow_mcsched.service.routes.report_params import read_report

router = APIRouter(prefix="/api/v1", tags=["governance"])


@router.get("/audit", response_model=AuditPage, summary="Audit entries, newest first, a page at a time")
def get_audit(
    seen: VisibilityDep,
    since: str | None = None,
    until: str | None = None,
    action: Annotated[str | None, Query(description="exact, or a prefix ending in '*' (placement.*)")] = None,
    actor: str | None = None,
    subject: str | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 100,
    cursor: Annotated[str | None, Query(description="next_cursor of the previous page")] = None,
) -> AuditPage:
    def build(store, now):
        start, end = parse_instant(since, "since", now), parse_instant(until, "until", now)
        return audit_page(store.session, start, end, action, actor, subject, limit, cursor, seen)

    return read_report(build, seen)


@router.get("/reclaim", summary="Reservations due to be reclaimed: expired leases and idle grants")
def get_reclaim(seen: VisibilityDep) -> dict[str, list[ReclaimCandidate]]:
    """The admission cycle reclaims these on its next run (each with an audit entry by `mcsched-reclaim`)."""
    policy = current_policy()
    return {"reservations": read_report(lambda store, now: store.reclaimable(policy, now), seen)}


@router.get("/retention", response_model=RetentionStatus, summary="How long history is kept, and the last purges")
def get_retention(seen: VisibilityDep) -> RetentionStatus:
    """`[mcsched] placement_retention` and `audit_retention` as the API servers purge by them: a
    placement or cost report covers only what is still kept."""
    return read_report(lambda store, now: configured_status(store.session, now, seen), seen)
