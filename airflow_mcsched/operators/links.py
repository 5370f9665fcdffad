"""The "Placement" button of a task instance: where its step was placed and why.

Kept import-light (the plugin module imports it in every Airflow component). The address is built
in `placement_url` alone, so it can point at a UI page once there is one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlencode

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.models.taskinstancekey import TaskInstanceKey
    from airflow.sdk import BaseOperator

SERVICE_PREFIX = "/mcsched"


def _service_root() -> str:
    """Users click links in a browser: prefer the public `[api] base_url` over the workers' service_url."""
    from airflow.configuration import conf

    from airflow_mcsched.hooks.placement import service_url

    base = conf.get("api", "base_url", fallback="").rstrip("/")
    return base + SERVICE_PREFIX if base else service_url()


def placement_url(dag_id: str, run_id: str, task_id: str) -> str:
    """The placements (every attempt, with explanations) of one task in one DAG run."""
    query = urlencode({"dag_id": dag_id, "run_id": run_id, "task_id": task_id})
    return f"{_service_root()}/api/v1/placements?{query}"


class PlacementLink(BaseOperatorLink):
    name = "Placement"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        return placement_url(ti_key.dag_id, ti_key.run_id, ti_key.task_id)
