"""Client configuration for virtual clusters: kubeconfigs and the matching Airflow connections.

The Airflow connection is what the cncf.kubernetes provider reads (conn_type `kubernetes`,
extra `kube_config` as a dict, plus the namespace), written both for `airflow connections
import` (JSON) and as `AIRFLOW_CONN_<ID>` lines a shell can source (`set -a; . connections.env`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class ClusterAccess:
    """Everything a client needs to reach one virtual cluster."""

    name: str
    url: str
    token: str
    namespace: str
    conn_id: str


def kubeconfig_dict(access: ClusterAccess) -> dict[str, Any]:
    user = f"{access.name}-admin"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": access.name, "cluster": {"server": access.url}}],
        "users": [{"name": user, "user": {"token": access.token}}],
        "contexts": [
            {"name": access.name, "context": {"cluster": access.name, "user": user, "namespace": access.namespace}}
        ],
        "current-context": access.name,
        "preferences": {},
    }


def airflow_connection(access: ClusterAccess) -> dict[str, Any]:
    """The connection as `airflow connections import` and AIRFLOW_CONN_* JSON take it."""
    return {
        "conn_type": "kubernetes",
        "description": f"mcsched virtual cluster {access.name}",
        "extra": {"kube_config": kubeconfig_dict(access), "namespace": access.namespace},
    }


def connection_env_name(conn_id: str) -> str:
    return "AIRFLOW_CONN_" + conn_id.upper()


def connection_env(accesses: Iterable[ClusterAccess]) -> dict[str, str]:
    return {connection_env_name(a.conn_id): json.dumps(airflow_connection(a)) for a in accesses}


@dataclass(frozen=True)
class WrittenFiles:
    kubeconfigs: dict[str, Path]
    connections_json: Path
    connections_env: Path

    def all(self) -> list[Path]:
        return [*self.kubeconfigs.values(), self.connections_json, self.connections_env]


def _private(path: Path, text: str) -> Path:
    """Write a file only the user can read: it holds bearer tokens."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    return path


def write_client_files(state_dir: Path, accesses: list[ClusterAccess]) -> WrittenFiles:
    kubeconfigs = {
        a.name: _private(
            state_dir / "kubeconfig" / f"{a.name}.yaml", yaml.safe_dump(kubeconfig_dict(a), sort_keys=False)
        )
        for a in accesses
    }
    connections = {a.conn_id: airflow_connection(a) for a in accesses}
    conn_json = _private(state_dir / "connections.json", json.dumps(connections, indent=2) + "\n")
    lines = [f"{name}='{value}'" for name, value in connection_env(accesses).items()]
    conn_env = _private(state_dir / "connections.env", "\n".join(lines) + "\n")
    return WrittenFiles(kubeconfigs, conn_json, conn_env)
