"""Start and stop a whole virtual fleet, one server per cluster, for tests, benchmarks and the CLI.

    with VirtualFleet.start("examples/fleet.yaml") as fleet:
        a100 = fleet.cluster("onprem-a100")
        api = a100.core_v1()            # a kubernetes.client.CoreV1Api
        a100.set_fault(error_rate=0.5)

`mode="thread"` serves every cluster from threads of this process (fastest start, direct
access to `handle.cluster`); `mode="process"` runs each in its own process (as the CLI does),
so servers use several cores and survive the caller with `detach=True`.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Literal

from airflow_mcsched.access.fleet_file import load_fleet_file
from airflow_mcsched.access.profiles import ClusterProfile, FleetSpec
from airflow_mcsched.virtual.cluster import VirtualCluster
from airflow_mcsched.virtual.kubeconfig import (
    ClusterAccess,
    WrittenFiles,
    airflow_connection,
    connection_env,
    kubeconfig_dict,
    write_client_files,
)
from airflow_mcsched.virtual.options import VirtualClusterOptions
from airflow_mcsched.virtual.serve import TOKEN_ENV
from airflow_mcsched.virtual.server import ClusterServer
from airflow_mcsched.virtual.state_file import SERVER_MODULE, ClusterRecord, FleetState

Mode = Literal["thread", "process"]


class ClusterHandle:
    """One running virtual cluster: where it is, how to reach it, how to hurt it."""

    def __init__(
        self,
        profile: ClusterProfile,
        url: str,
        token: str,
        server: ClusterServer | None = None,
        process: subprocess.Popen[bytes] | None = None,
        pid: int | None = None,
    ) -> None:
        self.profile = profile
        self.url = url
        self.token = token
        self._server = server
        self.process = process
        self.pid = pid or (process.pid if process else os.getpid())

    @property
    def name(self) -> str:
        return self.profile.name

    @property
    def conn_id(self) -> str:
        return self.profile.conn_id

    @property
    def cluster(self) -> VirtualCluster:
        """The in-process cluster (thread mode only), for white-box checks in tests."""
        if self._server is None:
            raise RuntimeError(f"cluster {self.name!r} runs in another process")
        return self._server.cluster

    @property
    def access(self) -> ClusterAccess:
        return ClusterAccess(self.name, self.url, self.token, self.profile.namespace, self.conn_id)

    def kubeconfig_dict(self) -> dict[str, Any]:
        return kubeconfig_dict(self.access)

    def airflow_connection(self) -> dict[str, Any]:
        return airflow_connection(self.access)

    def core_v1(self) -> Any:
        """A `kubernetes.client.CoreV1Api` for this cluster (imports kubernetes on first use)."""
        from kubernetes import client, config

        configuration = client.Configuration()
        config.load_kube_config_from_dict(self.kubeconfig_dict(), client_configuration=configuration)
        return client.CoreV1Api(client.ApiClient(configuration))

    # --- admin -----------------------------------------------------------------------------------

    def _admin(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            raise RuntimeError(f"{self.name}: {method} {path}: {err.code} {err.read().decode()}") from None

    def set_fault(
        self,
        *,
        unavailable: bool | None = None,
        latency_seconds: float | None = None,
        error_rate: float | None = None,
        refuse_seconds: float | None = None,
    ) -> dict[str, Any]:
        """Switch API faults on (others keep their value); `refuse_seconds` closes the port for that long."""
        changes = {
            k: v
            for k, v in {
                "unavailable": unavailable,
                "latency_seconds": latency_seconds,
                "error_rate": error_rate,
            }.items()
            if v is not None
        }
        if self._server is not None:
            faults = self.cluster.faults.update(**changes)
            if refuse_seconds is not None:
                self.cluster.faults.refuse(refuse_seconds)
            return {**faults.to_dict(), "refusing": self.cluster.faults.refusing}
        if refuse_seconds is not None:
            changes["refuse_seconds"] = refuse_seconds
        return self._admin("PATCH", "/_virtual/faults", changes)

    def refuse_connections(self) -> None:
        """Close the port until `clear_faults()` (thread mode; over HTTP nothing could reopen it)."""
        self.cluster.faults.refuse(None)

    def clear_faults(self) -> None:
        if self._server is not None:
            self.cluster.faults.clear()
        else:
            self._admin("DELETE", "/_virtual/faults")

    def set_node_ready(self, node: str, ready: bool, running_pods: str = "fail") -> None:
        if self._server is not None:
            self.cluster.set_node_ready(node, ready, running_pods)
        else:
            self._admin("POST", f"/_virtual/nodes/{node}/ready", {"ready": ready, "running_pods": running_pods})

    def cordon(self, node: str, cordoned: bool = True) -> None:
        if self._server is not None:
            self.cluster.cordon(node, cordoned)
        else:
            self._admin("POST", f"/_virtual/nodes/{node}/cordon", {"cordoned": cordoned})

    def summary(self) -> dict[str, Any]:
        return self.cluster.summary() if self._server is not None else self._admin("GET", "/_virtual/summary")

    def request_stop(self) -> None:
        if self._server is not None:
            self._server.request_stop()
        elif self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def join(self, timeout: float = 10.0) -> None:
        if self._server is not None:
            self._server.join()
        elif self.process is not None:
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def stop(self) -> None:
        self.request_stop()
        self.join()


def _spawn(
    profile: ClusterProfile, index: int, token: str, options: VirtualClusterOptions, log_path: Path | None, detach: bool
) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", SERVER_MODULE,
        "--profile-json", profile.model_dump_json(),
        "--options-json", json.dumps(options.to_dict()),
        "--cluster-index", str(index),
    ]  # fmt: skip
    stderr = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            start_new_session=detach,
            env={**os.environ, TOKEN_ENV: token},  # not on the command line, where `ps` shows it
        )
    finally:
        if log_path:
            stderr.close()


def _await_ready(process: subprocess.Popen[bytes], name: str, log_path: Path | None, timeout: float) -> dict[str, Any]:
    import selectors

    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            process.kill()
            raise RuntimeError(f"virtual cluster {name!r} did not start within {timeout:g}s")
    line = process.stdout.readline()
    process.stdout.close()
    if not line:
        detail = log_path.read_text()[-2000:] if log_path and log_path.exists() else "(no log)"
        raise RuntimeError(f"virtual cluster {name!r} exited at start:\n{detail}")
    return json.loads(line)


class VirtualFleet:
    def __init__(self, spec: FleetSpec, handles: dict[str, ClusterHandle], fleet_file: str = "") -> None:
        self.spec = spec
        self.handles = handles
        self.fleet_file = fleet_file
        self.files: WrittenFiles | None = None

    @classmethod
    def start(
        cls,
        fleet: FleetSpec | str | Path,
        *,
        mode: Mode = "thread",
        options: VirtualClusterOptions | None = None,
        token: str | None = None,
        only: list[str] | None = None,
        state_dir: Path | None = None,
        detach: bool = False,
        start_timeout: float = 30.0,
    ) -> VirtualFleet:
        """Start one server per cluster (all of them, or those named in `only`).

        Each cluster gets its own random bearer token unless `token` is given. With `state_dir`,
        kubeconfigs, Airflow connections and (process mode) the state file are written there.
        """
        fleet_file = "" if isinstance(fleet, FleetSpec) else str(fleet)
        spec = fleet if isinstance(fleet, FleetSpec) else load_fleet_file(fleet)
        profiles = [c for c in spec.clusters if only is None or c.name in only]
        missing = set(only or []) - {c.name for c in profiles}
        if missing:
            raise ValueError(f"no such cluster(s) in the fleet: {sorted(missing)}")
        options = options or VirtualClusterOptions()
        handles: dict[str, ClusterHandle] = {}
        started: list[tuple[ClusterProfile, str, Path, subprocess.Popen[bytes]]] = []
        try:
            if mode == "thread":
                for index, profile in enumerate(profiles):
                    server = ClusterServer(VirtualCluster(profile, options, token, cluster_index=index)).start()
                    handles[profile.name] = ClusterHandle(profile, server.url, server.cluster.token, server=server)
            else:
                log_dir = (
                    Path(state_dir) / "logs" if state_dir else Path(tempfile.mkdtemp(prefix="mcsched-fleet-logs-"))
                )
                log_dir.mkdir(parents=True, exist_ok=True)
                for index, profile in enumerate(profiles):
                    secret = token or secrets.token_urlsafe(24)
                    log_path = log_dir / f"{profile.name}.log"
                    started.append(
                        (profile, secret, log_path, _spawn(profile, index, secret, options, log_path, detach))
                    )
                for profile, secret, log_path, process in started:
                    ready = _await_ready(process, profile.name, log_path, start_timeout)
                    handles[profile.name] = ClusterHandle(profile, ready["url"], secret, process=process)
        except BaseException:
            for handle in handles.values():
                handle.stop()
            for *_, process in started:
                if process.poll() is None:
                    process.kill()
            raise
        fleet_obj = cls(spec, handles, fleet_file)
        if state_dir:
            fleet_obj.write_state(Path(state_dir))
        return fleet_obj

    def cluster(self, name: str) -> ClusterHandle:
        try:
            return self.handles[name]
        except KeyError:
            raise KeyError(f"no virtual cluster {name!r}; running: {sorted(self.handles)}") from None

    def __iter__(self):
        return iter(self.handles.values())

    def connection_env(self) -> dict[str, str]:
        """`AIRFLOW_CONN_<CONN_ID>` -> JSON for every cluster, to put into os.environ."""
        return connection_env(h.access for h in self.handles.values())

    def write_state(self, state_dir: Path) -> FleetState:
        self.files = write_client_files(state_dir, [h.access for h in self.handles.values()])
        records = [
            ClusterRecord(
                name=h.name, url=h.url, port=int(h.url.rsplit(":", 1)[1]), pid=h.pid, token=h.token,
                conn_id=h.conn_id, namespace=h.profile.namespace, kubeconfig=str(self.files.kubeconfigs[h.name]),
                log=str(state_dir / "logs" / f"{h.name}.log"),
            )
            for h in self.handles.values()
        ]  # fmt: skip
        state = FleetState(self.fleet_file, records, [str(p) for p in self.files.all()])
        state.save(state_dir)
        return state

    def stop(self) -> None:
        for handle in self.handles.values():
            handle.request_stop()
        for handle in self.handles.values():
            handle.join()

    def __enter__(self) -> VirtualFleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.02, what: str = "condition") -> Any:
    """Poll until `predicate()` is truthy and return its value (tests and benchmarks use it)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)
