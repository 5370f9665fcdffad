"""The Cost page: GPU-hours and cost per team and project over a window, with charts per team and
per day, read from the reports API (cost and cost/series)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from airflow_mcsched.ui import charts
from airflow_mcsched.ui.access import PageCaller
from airflow_mcsched.ui.report_client import get_report
from airflow_mcsched.ui.templating import money, render

router = APIRouter(prefix="/ui", include_in_schema=False)
WINDOWS = (1, 7, 30, 90)


@dataclass(frozen=True)
class Window:
    """Whole UTC days up to now: a chart per day then has no partial first bucket."""

    days: int
    since: datetime
    until: datetime

    @classmethod
    def last(cls, days: int, now: datetime) -> Window:
        start = datetime.combine(now.date() - timedelta(days=days - 1), time(0), tzinfo=UTC)
        return cls(days, start, now)

    def params(self) -> dict[str, str]:
        return {"since": self.since.isoformat(), "until": self.until.isoformat()}


def cost_per(rows: list[dict[str, Any]], key: str) -> list[tuple[str, float]]:
    """Cost summed over one grouping key of the team,project rows, largest first."""
    sums: dict[str, float] = defaultdict(float)
    for row in rows:
        sums[row.get(key) or "—"] += row.get("cost") or 0.0
    return sorted(sums.items(), key=lambda kv: (-kv[1], kv[0]))


@router.get("/cost", response_class=HTMLResponse)
async def cost_page(
    request: Request,
    caller: PageCaller,
    days: Annotated[int, Query(ge=1, le=366)] = 30,
    by: Literal["team", "project"] = "team",
) -> HTMLResponse:
    window = Window.last(days, datetime.now(UTC))
    table = await get_report(request, "/api/v1/reports/cost", {**window.params(), "group_by": "team,project"})
    series = await get_report(
        request, "/api/v1/reports/cost/series", {**window.params(), "group_by": by, "bucket": "day"}
    )
    kept = await get_report(request, "/api/v1/retention", {})  # a report covers only what is kept
    context: dict[str, Any] = {"window": window, "windows": WINDOWS, "by": by, "table": table, "series": series}
    context["retention"] = kept.body if kept.ok else None
    if table.ok:
        rows = table.body["rows"]
        context["by_team_chart"] = charts.bar_chart(cost_per(rows, "team"), money, "cost per team")
        context["by_project_chart"] = charts.bar_chart(cost_per(rows, "project"), money, "cost per project")
    if series.ok:
        lines = [(s["key"] or "—", s["values"]) for s in series.body["series"]]
        context["series_chart"] = charts.stacked_columns(series.body["buckets"], lines, money, f"cost per day by {by}")
    return render(request, "cost.html", caller=caller, page="cost", **context)
