"""Cost and usage reports from the recorded lineage, the capacity view with a demand forecast, quota use.

Windows are [since, until) (ISO dates or times, `now`, or an age such as `7d`; default the last 7
days); a placement overlapping the window counts only for its part inside. People (Airflow login)
and tasks (their own token, as the daily report DAG) may read them; a private team's rows read as
`other (private)` to outsiders (`service.visibility`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response

from airflow_mcsched.governance.capacity import CapacityReport
from airflow_mcsched.governance.forecast import METHOD, DemandForecast
from airflow_mcsched.governance.quota_use import QuotaUse
from airflow_mcsched.governance.report_format import cost_csv, cost_document, series_document
from airflow_mcsched.governance.usage import GroupKey, parse_group_by
from airflow_mcsched.governance.utilisation import ClusterUtilisation
from airflow_mcsched.governance.waiting import TeamWaiting
from airflow_mcsched.service.auth import VisibilityDep
from airflow_mcsched.service.policy_source import current_policy
from airflow_mcsched.service.routes.report_params import (
    CostQueryDep,
    GroupBy,
    Since,
    Until,
    read_report,
    window_of,
)

router = APIRouter(prefix="/api/v1/reports", tags=["reports"])


@router.get("/cost", summary="GPU-hours and cost per group over a window (JSON or CSV)")
def cost(seen: VisibilityDep, query: CostQueryDep, format: Literal["json", "csv"] = "json") -> Any:
    """`rows` hold the group keys, `gpu_hours`, `cost` and `placements` (placements that ran in the
    window); `total` the sums. `format=csv` returns the same rows as CSV (header = keys + figures)."""
    report = read_report(lambda store, now: store.cost(query, now), seen)
    if format == "csv":
        name = f"gpu-cost-{report.since:%Y%m%d%H%M}-{report.until:%Y%m%d%H%M}.csv"
        return Response(
            cost_csv(report), media_type="text/csv", headers={"Content-Disposition": f'attachment; filename="{name}"'}
        )
    return cost_document(report)


@router.get("/cost/series", summary="Cost per group and UTC day, for charts")
def cost_series(seen: VisibilityDep, query: CostQueryDep, bucket: Literal["day"] = "day") -> dict[str, Any]:
    """`buckets` are ISO dates; each series has one cost per bucket (keys of several groups join with '/')."""
    return series_document(read_report(lambda store, now: store.cost_series(query, now), seen))


@router.get("/utilisation", summary="Per cluster: GPU-hours used, reserved but not running, and free")
def get_utilisation(seen: VisibilityDep, since: Since = None, until: Until = None) -> dict[str, Any]:
    def build(store, now):
        window = window_of(since, until, now)
        return window, store.utilisation(window, now)

    window, lines = read_report(build, seen)
    clusters: list[ClusterUtilisation] = lines
    return {"since": window.since, "until": window.until, "clusters": clusters}


@router.get("/waiting", summary="Time queued before admission per team: mean, p95, max")
def get_waiting(
    seen: VisibilityDep, since: Since = None, until: Until = None, team: str | None = None
) -> dict[str, Any]:
    def build(store, now):
        window = window_of(since, until, now)
        return window, store.waiting(window, now, team=team)

    window, lines = read_report(build, seen)
    teams: list[TeamWaiting] = lines
    return {"since": window.since, "until": window.until, "teams": teams}


@router.get("/top", summary="Top spenders: the teams or projects that cost most in the window")
def get_top(
    seen: VisibilityDep,
    since: Since = None,
    until: Until = None,
    by: Literal["team", "project"] = "team",
    n: Annotated[int, Query(ge=1, le=1000)] = 10,
) -> dict[str, Any]:
    def build(store, now):
        return store.top(window_of(since, until, now), by, n, now)

    report = read_report(build, seen)
    return {**cost_document(report), "by": by, "n": n}


@router.get("/quota", summary="Quota use now: GPUs held per team and quota entry against its nominal")
def get_quota(seen: VisibilityDep) -> dict[str, list[QuotaUse]]:
    policy = current_policy()
    return {"quotas": read_report(lambda store, now: store.quota(policy), seen)}


@router.get("/capacity", summary="Free and reserved GPUs per cluster and GPU type now, and a demand forecast")
def get_capacity(
    seen: VisibilityDep,
    forecast_days: Annotated[int, Query(ge=1, le=366)] = 7,
    forecast_weeks: Annotated[int, Query(ge=1, le=52)] = 4,
    forecast_by: GroupBy = "team,gpu_type",
) -> dict[str, Any]:
    """The forecast is seasonal-naive: each coming day gets the mean GPU-hours of the same weekday
    over the last `forecast_weeks` weeks (see `airflow_mcsched.governance.forecast`)."""
    policy = current_policy()

    def build(store, now):
        keys: tuple[GroupKey, ...] = parse_group_by(forecast_by)
        return store.capacity(policy, now), store.forecast(now, forecast_days, forecast_weeks, keys), keys

    capacity, forecast, keys = read_report(build, seen)
    report: CapacityReport = capacity
    lines: list[DemandForecast] = forecast
    return {
        **report.model_dump(),
        "forecast": {"method": METHOD, "weeks": forecast_weeks, "group_by": list(keys), "lines": lines},
    }
