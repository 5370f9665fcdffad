"""Puts the pages into the placement service's app: their routes under /ui, the stylesheet and icon
under /ui/static, and the answer to a page request without a login (Airflow's login page)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from airflow_mcsched.ui import cost, fleet, placements
from airflow_mcsched.ui.access import LoginRequired, redirect_to_login

STATIC = Path(__file__).with_name("static")


def install_pages(app: FastAPI) -> None:
    for module in (fleet, placements, cost):
        app.include_router(module.router)
    app.mount("/ui/static", StaticFiles(directory=STATIC), name="mcsched-ui-static")
    app.add_exception_handler(LoginRequired, redirect_to_login)
