"""What the report, audit and reclaim routes share: a read-only session and 422s that name the field."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, TypeVar

from airflow.utils.session import create_session
from fastapi import Depends, HTTPException, Query

from airflow_mcsched.governance.usage import GROUP_KEYS, parse_group_by
from airflow_mcsched.governance.window import ReportParamError, TimeWindow
from airflow_mcsched.service import errors
from airflow_mcsched.service.report_store import CostQuery, ReportStore
from airflow_mcsched.service.visibility import EVERYTHING, Visibility

T = TypeVar("T")


def unprocessable(err: ReportParamError) -> HTTPException:
    """The same shape as FastAPI's own validation errors, so clients read one format."""
    return errors.unprocessable([errors.field_problem(["query", err.field], err.message)])


def window_of(since: str | None, until: str | None, now: datetime) -> TimeWindow:
    try:
        return TimeWindow.parse(since, until, now)
    except ReportParamError as err:
        raise unprocessable(err) from None


Since = Annotated[str | None, Query(description="start (inclusive): ISO date/time, 'now' or an age like 30d")]
Until = Annotated[str | None, Query(description="end (exclusive); default now")]
GroupBy = Annotated[str | None, Query(description=f"comma-separated keys of {', '.join(GROUP_KEYS)}")]


def cost_query(
    since: Since = None,
    until: Until = None,
    group_by: GroupBy = "team",
    team: Annotated[str | None, Query(description="only this team")] = None,
    project: Annotated[str | None, Query(description="only this project")] = None,
) -> CostQuery:
    """The parameters the cost report and the cost series share, validated once."""
    try:
        window = TimeWindow.parse(since, until, datetime.now(UTC))
        return CostQuery(window, parse_group_by(group_by), team, project)
    except ReportParamError as err:
        raise unprocessable(err) from None


CostQueryDep = Annotated[CostQuery, Depends(cost_query)]


def read_report(build: Callable[[ReportStore, datetime], T], seen: Visibility = EVERYTHING) -> T:
    """Run `build(store, now)` in a session, showing what `seen` allows; a bad parameter found on
    the way becomes a 422."""
    now = datetime.now(UTC)
    try:
        with create_session() as session:
            return build(ReportStore(session, seen), now)
    except ReportParamError as err:
        raise unprocessable(err) from None
