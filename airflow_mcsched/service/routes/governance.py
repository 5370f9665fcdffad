"""The audit trail (who did what, when) and the reservations due to be reclaimed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from airflow_mcsched.governance.reclaim import ReclaimCandidate
from airflow_mcsched.governance.window import parse_instant
from airflow_mcsched.service.audit_store import MAX_LIMIT, AuditPage, audit_page
from airflow_mcsched.service.auth import VisibilityDep
from airflow_mcsched.service.policy_source import current_policy
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
