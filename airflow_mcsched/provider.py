"""Provider metadata, read by Airflow's providers manager through the `apache_airflow_provider` entry point."""

from __future__ import annotations

from typing import Any


def get_provider_info() -> dict[str, Any]:
    from airflow_mcsched import __version__

    return {
        "package-name": "airflow-mcsched",
        "name": "Multi-cluster GPU scheduling (mcsched)",
        "description": "Places Kubernetes pods of DAG tasks on the best cluster of a GPU fleet.",
        "versions": [__version__],
        "connection-types": [],
        "extra-links": ["airflow_mcsched.operators.links.PlacementLink"],
        "db-managers": ["airflow_mcsched.service.db_manager.McschedDBManager"],
    }
