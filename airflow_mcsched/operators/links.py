"""The "Placement" button of a task instance: where its step was placed and why.

It opens the step's placement page inside the Airflow UI (the UI's frame for our Placements page,
deep-linked to the task), so the explanation shows with Airflow's own menus and login. Kept
import-light: the plugin module imports it in every Airflow component.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow.sdk import BaseOperatorLink

from airflow_mcsched.ui.nav import inside_airflow_ui, task_placement_path

if TYPE_CHECKING:
    from airflow.models.taskinstancekey import TaskInstanceKey
    from airflow.sdk import BaseOperator

SERVICE_PREFIX = "/mcsched"


def _airflow_root() -> str:
    """Users click links in a browser: prefer the public `[api] base_url` over the workers' service_url
    (which is the API server's address too, with the service's prefix)."""
    from airflow.configuration import conf

    from airflow_mcsched.hooks.placement import service_url

    base = conf.get("api", "base_url", fallback="").rstrip("/")
    return base or service_url().removesuffix(SERVICE_PREFIX)


def placement_url(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
    """The task instance's latest placement (with its explanation) in the Airflow UI."""
    return _airflow_root() + inside_airflow_ui(task_placement_path(dag_id, run_id, task_id, map_index))


class PlacementLink(BaseOperatorLink):
    name = "Placement"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        return placement_url(ti_key.dag_id, ti_key.run_id, ti_key.task_id, ti_key.map_index)
