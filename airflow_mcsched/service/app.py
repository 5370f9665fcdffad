"""The placement service: a FastAPI app that the plugin mounts in Airflow's API server at /mcsched.

All truth lives in the metadata DB, so any number of API-server replicas can serve it; the
capacity sync runs in each replica's lifespan and a per-cluster lease lets one read at a time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from airflow_mcsched import __version__
from airflow_mcsched.service.settings import ServiceSettings

log = logging.getLogger(__name__)
URL_PREFIX = "/mcsched"


def _start_sync(settings: ServiceSettings) -> tuple[threading.Thread, threading.Event]:
    from airflow_mcsched.cli.sync import build_sync

    stop = threading.Event()
    sync = build_sync(settings.sync_timeout_seconds)
    sync.lease_seconds = settings.sync_lease_seconds
    thread = threading.Thread(
        target=sync.run, args=(settings.sync_interval_seconds, stop), name="mcsched-capacity-sync", daemon=True
    )
    thread.start()
    return thread, stop


def create_app(settings: ServiceSettings | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        resolved = settings or ServiceSettings.from_airflow_conf()
        app.state.settings = resolved
        running = _start_sync(resolved) if resolved.sync_enabled else None
        try:
            yield
        finally:
            if running:
                thread, stop = running
                stop.set()
                thread.join(timeout=resolved.sync_timeout_seconds + 5)

    app = FastAPI(
        title="mcsched placement service",
        version=__version__,
        description="Places DAG steps on the best cluster of a GPU fleet and explains why.",
        lifespan=lifespan,
    )
    from airflow_mcsched.service.routes import clusters, placements

    app.include_router(clusters.router)
    app.include_router(placements.router)
    return app
