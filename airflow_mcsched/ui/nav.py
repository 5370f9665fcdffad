"""Where the pages live and how the Airflow UI lists them; import-light, since every Airflow component
imports the plugin (and the operators' extra link) that reads these names.

The pages are served by the placement service under /mcsched/ui and registered as `external_views`
with destination "nav": the Airflow 3.3 UI lists them in its Plugins menu and shows each in a
same-origin iframe at /plugin/<url_route>, whose address follows the iframe's own path
(/plugin/<url_route>/mcsched/ui/...), so a page can be linked to from outside through the UI shell.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

UI_PREFIX = "/mcsched/ui"
ICON = f"{UI_PREFIX}/static/icon.svg"

FLEET_ROUTE = "mcsched-fleet"
PLACEMENTS_ROUTE = "mcsched-placements"
COST_ROUTE = "mcsched-cost"


def external_views() -> list[dict[str, Any]]:
    """The plugin's `external_views`: one Plugins-menu entry per page."""
    pages = (
        ("GPU Fleet", "fleet", FLEET_ROUTE),
        ("GPU Placements", "placements", PLACEMENTS_ROUTE),
        ("GPU Cost", "cost", COST_ROUTE),
    )
    return [
        {
            "name": name,
            "href": f"{UI_PREFIX}/{page}",
            "destination": "nav",
            "url_route": route,
            "icon": ICON,
        }
        for name, page, route in pages
    ]


def task_placement_path(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
    """The page that shows a task instance's latest placement (it redirects to that placement's page)."""
    query = urlencode({"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index})
    return f"{UI_PREFIX}/placements/of-task?{query}"


def inside_airflow_ui(page_path: str) -> str:
    """The Airflow UI address that shows one of our pages in its Placements frame (with Airflow's menus)."""
    return f"/plugin/{PLACEMENTS_ROUTE}{page_path}"
