"""Kubernetes API clients for clusters, from their Airflow connections (one connection per cluster).

The same connection the KubernetesPodOperator launches through is the one capacity is read
through, so what the view sees and where pods go can never disagree.
"""

from __future__ import annotations

import threading
from typing import Any

from airflow_mcsched.access.profiles import ClusterProfile


class ConnectionClients:
    """Caches one ApiClient per connection id; `forget` drops it after a connection changes."""

    def __init__(self) -> None:
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __call__(self, profile: ClusterProfile) -> Any:
        with self._lock:
            client = self._clients.get(profile.conn_id)
            if client is None:
                from airflow.providers.cncf.kubernetes.hooks.kubernetes import KubernetesHook

                client = KubernetesHook(conn_id=profile.conn_id).get_conn()
                self._clients[profile.conn_id] = client
            return client

    def forget(self, conn_id: str) -> None:
        with self._lock:
            self._clients.pop(conn_id, None)
