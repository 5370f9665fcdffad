"""The placement service: a FastAPI app that the plugin mounts in Airflow's API server at /mcsched.

All truth lives in the metadata DB, so any number of API-server replicas can serve it; the
capacity sync runs in each replica's lifespan and a per-cluster lease lets one read at a time.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from airflow_mcsched import __version__
from airflow_mcsched.decision import PolicyError
from airflow_mcsched.service.background import BackgroundWork
from airflow_mcsched.service.body_limit import BodySizeLimit
from airflow_mcsched.service.nul_text import RefuseNulText
from airflow_mcsched.service.settings import ServiceSettings

log = logging.getLogger(__name__)
URL_PREFIX = "/mcsched"


def create_app(settings: ServiceSettings | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        resolved = settings or ServiceSettings.from_airflow_conf()
        app.state.settings = resolved
        background = BackgroundWork(resolved).start()
        try:
            yield
        finally:
            background.shutdown()

    app = FastAPI(
        title="mcsched placement service",
        version=__version__,
        description="Places DAG steps on the best cluster of a GPU fleet and explains why.",
        lifespan=lifespan,
    )
    app.add_middleware(RefuseNulText)
    app.add_middleware(BodySizeLimit)  # added last, so it runs first: no oversized body is read
    app.add_exception_handler(PolicyError, _policy_broken)
    from airflow_mcsched.service.routes import clusters, governance, placements, reports

    app.include_router(clusters.router)
    app.include_router(placements.router)
    app.include_router(reports.router)
    app.include_router(governance.router)
    from airflow_mcsched.ui.pages import install_pages

    install_pages(app)
    return app


async def _policy_broken(request: Request, exc: Exception) -> JSONResponse:
    """A policy file that does not parse stops the service from deciding or showing anything (it
    may say who is private); the answer names the field to fix instead of a bare 500."""
    return JSONResponse(
        status_code=503,
        content={"detail": f"the placement policy ([mcsched] policy_file) is invalid; fix it and retry: {exc}"},
    )
