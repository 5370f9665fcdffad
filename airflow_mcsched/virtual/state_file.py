"""The state file of `mcsched virtual-clusters up`: which servers run where, for `status` and `down`."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

STATE_FILE = "state.json"
SERVER_MODULE = "airflow_mcsched.virtual.serve"


@dataclass
class ClusterRecord:
    name: str
    url: str
    port: int
    pid: int
    token: str
    conn_id: str
    namespace: str
    kubeconfig: str
    log: str


@dataclass
class FleetState:
    fleet_file: str
    clusters: list[ClusterRecord]
    files: list[str] = field(default_factory=list)  # generated files `down` removes

    def save(self, state_dir: Path) -> Path:
        state_dir.mkdir(parents=True, exist_ok=True)
        path = state_dir / STATE_FILE
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(asdict(self), handle, indent=2)
        return path

    @classmethod
    def load(cls, state_dir: Path) -> FleetState | None:
        path = state_dir / STATE_FILE
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        return cls(data["fleet_file"], [ClusterRecord(**c) for c in data["clusters"]], data.get("files", []))


def server_alive(pid: int) -> bool:
    """True when `pid` is still one of our cluster servers (not a recycled pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True  # no /proc: trust the pid
    return SERVER_MODULE.encode() in cmdline
