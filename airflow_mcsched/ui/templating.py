"""Jinja2 templates of the pages and the few number and time formats they share.

The formats are plain functions so that tests can predict exactly what a page prints.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from airflow_mcsched.governance.retention import describe_age
from airflow_mcsched.ui import charts
from airflow_mcsched.ui.nav import UI_PREFIX

TEMPLATES = Jinja2Templates(directory=Path(__file__).with_name("templates"))


def money(value: float | None) -> str:
    """Costs: cents for anything from one unit up, four decimals below (short test runs cost little)."""
    if value is None:
        return "—"
    return f"{value:,.2f}" if abs(value) >= 1 else f"{value:.4f}"


def hours(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3f}"


def when(value: datetime | str | None) -> str:
    """UTC to the second, as Airflow's API reports times."""
    if value is None:
        return "—"
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def age(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


def kept_for(seconds: float) -> str:
    """How long history is kept: '180 days', '2 weeks'."""
    return describe_age(timedelta(seconds=seconds))


for _name, _filter in {"money": money, "hours": hours, "when": when, "age": age, "kept_for": kept_for}.items():
    TEMPLATES.env.filters[_name] = _filter
TEMPLATES.env.globals.update(ui=UI_PREFIX, charts=charts)


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    return TEMPLATES.TemplateResponse(request, template, context, status_code=status_code)
