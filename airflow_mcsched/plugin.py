"""The Airflow plugin: mounts the placement service with its UI pages in the API server.

Every Airflow component imports this module, so the app is only built in the API server
process (or where MCSCHED_SERVE_APP=1 asks for it, as in-process tests do).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from airflow.plugins_manager import AirflowPlugin

from airflow_mcsched.operators.links import PlacementLink
from airflow_mcsched.ui import nav


def _serving_api() -> bool:
    return sys.argv[1:2] == ["api-server"] or os.environ.get("MCSCHED_SERVE_APP") == "1"


def _fastapi_apps() -> list[dict[str, Any]]:
    if not _serving_api():
        return []
    from airflow_mcsched.service.app import URL_PREFIX, create_app

    return [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "mcsched placement service"}]


class MultiClusterSchedulingPlugin(AirflowPlugin):
    name = "mcsched"
    fastapi_apps = _fastapi_apps()
    # the pages are routes of that app, so they are listed only where it is served
    external_views = nav.external_views() if _serving_api() else []
    operator_extra_links = [PlacementLink()]
