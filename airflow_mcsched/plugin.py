"""The Airflow plugin: mounts the placement service and the UI pages in the API server.

Every Airflow component imports this module, so it imports nothing heavy at the top.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin


class MultiClusterSchedulingPlugin(AirflowPlugin):
    name = "mcsched"
