"""Airflow's components as separate local processes: API server, scheduler, DAG processor, triggerer.

The demo and the end-to-end tests run DAGs the way a deployment does (LocalExecutor, tasks under
the Task SDK with no ORM, the placement service inside the API server), on one machine, with low
parallelism. Ports are chosen free, so several stacks (or a stack and other tests) never collide.

With ``executor="CeleryExecutor"`` and ``celery_workers`` named, the same stack is the distributed
shape: the scheduler sends tasks through a broker and each named worker is its own
``airflow celery worker`` process with its own hostname, as if it ran on its own machine.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
# what /api/v2/monitor/health reports for each component
HEALTH_KEYS = {
    "api-server": "metadatabase",
    "scheduler": "scheduler",
    "triggerer": "triggerer",
    "dag-processor": "dag_processor",
}


STACK_HOSTNAME_ENV = "MCSCHED_STACK_HOSTNAME"

# `[database] sql_alchemy_connect_args(_async)` of a stack on SQLite: how long a connection waits
# for another process's write to end before it fails with "database is locked". Python's default
# of 5 s is short on a busy two-core machine where four Airflow processes and the placement
# service share one file: an API call then answered 500 "Database error" while the scheduler
# committed. Airflow imports these by name.
# Two dicts: Airflow adds `check_same_thread` to the sync one in place, which aiosqlite must not get.
SQLITE_CONNECT_ARGS: dict[str, Any] = {"timeout": 60}
SQLITE_ASYNC_CONNECT_ARGS: dict[str, Any] = {"timeout": 60}


def stack_hostname() -> str:
    """`[core] hostname_callable` for the processes of a local stack: the name the stack gave the
    process, else the machine's. Two Celery workers on one machine would otherwise record the same
    task-instance hostname, and nothing could tell which of them ran a task."""
    return os.environ.get(STACK_HOSTNAME_ENV) or socket.getfqdn()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class AirflowStack:
    """Start with `start()`, stop with `stop()` (or use as a context manager). `components` may name
    a subset (the UI tests need only the API server).

    `executor` is Airflow's executor; with ``CeleryExecutor`` give ``broker_url`` and name the
    workers in `celery_workers`: each runs `celery_concurrency` task slots, consumes
    `celery_queue` (also the operators' default queue, so concurrent stacks sharing one broker
    never take each other's tasks) and reports its name as the task instances' hostname."""

    home: Path
    sql_alchemy_conn: str
    dags_folder: Path
    jwt_secret: str
    extra_env: dict[str, str] = field(default_factory=dict)
    admin_password: str = "admin"
    parallelism: int = 4
    port: int = field(default_factory=free_port)
    components: tuple[str, ...] = COMPONENTS
    executor: str = "LocalExecutor"
    broker_url: str | None = None
    celery_workers: tuple[str, ...] = ()
    celery_concurrency: int = 4
    celery_queue: str = "default"
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        (self.home / "passwords.json").write_text(json.dumps({"admin": self.admin_password}))
        # the caller's own Airflow settings (a test session's, a user's shell) must not leak in
        inherited = {
            k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "MCSCHED_", "AIRFLOW_CONN_"))
        }
        return {
            **inherited,
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.sql_alchemy_conn,
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": self.executor,
            "AIRFLOW__CORE__PARALLELISM": str(self.parallelism),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.home / "passwords.json"),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__BASE_URL": self.url,
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API_AUTH__JWT_SECRET": self.jwt_secret,
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "10",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__MCSCHED__SERVICE_URL": f"{self.url}/mcsched",
            "AIRFLOW__MCSCHED__SYNC_ENABLED": "True",
            "AIRFLOW__MCSCHED__SYNC_INTERVAL_SECONDS": "3",
            "AIRFLOW__MCSCHED__ADMISSION_INTERVAL_SECONDS": "2",
            **self.sqlite_env(),
            **self.celery_env(),
            **self.extra_env,
        }

    @property
    def on_sqlite(self) -> bool:
        return self.sql_alchemy_conn.startswith("sqlite")

    @property
    def sqlite_file(self) -> str:
        """The metadata DB's file, on SQLite (the URL's absolute path, as Airflow requires)."""
        return self.sql_alchemy_conn.split(":///", 1)[1]

    def sqlite_env(self) -> dict[str, str]:
        """A longer wait for SQLite's single writer (see `SQLITE_CONNECT_ARGS`); nothing on other DBs."""
        if not self.on_sqlite:
            return {}
        return {
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS": f"{__name__}.SQLITE_CONNECT_ARGS",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS_ASYNC": f"{__name__}.SQLITE_ASYNC_CONNECT_ARGS",
        }

    def use_wal(self) -> None:
        """Switch the SQLite file to write-ahead logging (kept in the file): readers then never
        block the writer nor wait for its commit, so the processes' many reads stop queueing
        behind each write."""
        with closing(sqlite3.connect(self.sqlite_file, timeout=60)) as db:
            mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise RuntimeError(f"SQLite at {self.sqlite_file} refused write-ahead logging (journal mode {mode})")

    def celery_env(self) -> dict[str, str]:
        """The broker and queue settings, only when the stack runs Celery (the other executors
        would warn about, or ignore, a `[celery]` section)."""
        if self.executor != "CeleryExecutor":
            return {}
        if not self.broker_url:
            raise ValueError("CeleryExecutor needs broker_url (e.g. redis://127.0.0.1:6379/0)")
        return {
            "AIRFLOW__CELERY__BROKER_URL": self.broker_url,
            "AIRFLOW__CELERY__WORKER_CONCURRENCY": str(self.celery_concurrency),
            "AIRFLOW__OPERATORS__DEFAULT_QUEUE": self.celery_queue,
            "AIRFLOW__CORE__HOSTNAME_CALLABLE": f"{__name__}.stack_hostname",
        }

    def worker_args(self, airflow: str, worker: str) -> list[str]:
        """One Celery worker: its own node name, the stack's queue, and no log server (two on one
        machine would fight over its port; the task logs are on the shared disk anyway)."""
        return [
            airflow, "celery", "worker", "--celery-hostname", f"{worker}@%h", "--queues", self.celery_queue,
            "--concurrency", str(self.celery_concurrency), "--skip-serve-logs",
        ]  # fmt: skip

    def start(self, timeout: float = 120.0) -> AirflowStack:
        logs = self.home / "logs" / "components"
        logs.mkdir(parents=True, exist_ok=True)
        airflow = str(Path(sys.executable).with_name("airflow"))
        env = self.env()
        subprocess.run([airflow, "db", "migrate"], check=True, env=env, stdout=subprocess.DEVNULL)
        if self.on_sqlite:
            self.use_wal()
        for name in self.components:
            args = [airflow, name] + (["-p", str(self.port), "-H", "127.0.0.1"] if name == "api-server" else [])
            self.processes[name] = self._spawn(name, args, env)
        for worker in self.celery_workers:
            self.processes[worker] = self._spawn(
                worker, self.worker_args(airflow, worker), {**env, STACK_HOSTNAME_ENV: worker}
            )
        try:
            self.wait_healthy(timeout)
            self.wait_workers_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with open(self.component_log(name), "ab") as out:
            return subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def component_log(self, name: str) -> Path:
        return self.home / "logs" / "components" / f"{name}.log"

    def wait_workers_ready(self, timeout: float) -> None:
        """Until every Celery worker has said it is ready (the health endpoint knows no workers):
        a task sent before a worker listens would only wait, but a test's timing would not hold."""
        deadline = time.monotonic() + timeout
        for worker in self.celery_workers:
            ready = re.compile(rf"\b{re.escape(worker)}@\S+ ready\.")
            while not ready.search(self.component_log(worker).read_text(errors="replace")):
                if self.processes[worker].poll() is not None:
                    raise RuntimeError(f"Celery worker {worker} exited; see {self.component_log(worker)}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"Celery worker {worker} was not ready in {timeout:.0f}s")
                time.sleep(0.5)

    def health(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/monitor/health", timeout=3) as r:
                return json.loads(r.read())
        except (OSError, ValueError):
            return None

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [n for n, p in self.processes.items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"Airflow {dead} exited; see {self.home / 'logs' / 'components'}")
            h = self.health()
            keys = [HEALTH_KEYS[c] for c in self.components]
            if h and all((h.get(k) or {}).get("status") == "healthy" for k in keys):
                return
            time.sleep(1)
        raise TimeoutError(f"Airflow did not become healthy in {timeout:.0f}s: {self.health()}")

    def stop(self, timeout: float = 20.0) -> None:
        for p in self.processes.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in self.processes.values():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.processes.clear()

    def __enter__(self) -> AirflowStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- driving it over its REST API, as a user would -----------------------------------------
    def token(self) -> str:
        body = json.dumps({"username": "admin", "password": self.admin_password}).encode()
        req = urllib.request.Request(
            f"{self.url}/auth/token", data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())["access_token"]

    def api(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        req.add_header("Authorization", f"Bearer {token or self.token()}")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as err:
            raise RuntimeError(f"{method} {path}: {err.code} {err.read().decode()[:500]}") from None

    def wait_for_dag(self, dag_id: str, timeout: float = 120.0) -> None:
        """Until the DAG processor has parsed the DAG file."""
        deadline = time.monotonic() + timeout
        token = self.token()
        while time.monotonic() < deadline:
            try:
                self.api("GET", f"/api/v2/dags/{dag_id}", token=token)
                return
            except RuntimeError:
                time.sleep(1)
        raise TimeoutError(f"DAG {dag_id} was not parsed within {timeout:.0f}s")

    def trigger(self, dag_id: str, conf: dict[str, Any] | None = None, run_id: str | None = None) -> str:
        token = self.token()
        self.api("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False}, token=token)
        # a logical date, so templates such as {{ ds }} render as in a scheduled run
        logical_date = datetime.now(UTC).isoformat()
        body: dict[str, Any] = {"logical_date": logical_date, "conf": conf or {}}
        if run_id:
            body["dag_run_id"] = run_id
        return self.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", body, token=token)["dag_run_id"]

    def scheduled_run(self, dag_id: str, timeout: float = 120.0) -> str:
        """Unpause a scheduled DAG and return the run the scheduler creates for its latest interval
        (a manual trigger on top of it would run the pipeline twice at once)."""
        token = self.token()
        self.api("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False}, token=token)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns", token=token)["dag_runs"]
            if runs:
                return runs[0]["dag_run_id"]
            time.sleep(1)
        raise TimeoutError(f"the scheduler created no run of {dag_id} within {timeout:.0f}s")

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float = 300.0, on_poll=None) -> str:
        deadline = time.monotonic() + timeout
        token = self.token()
        while time.monotonic() < deadline:
            run = self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}", token=token)
            if on_poll:
                on_poll(run)
            if run["state"] in ("success", "failed"):
                return run["state"]
            time.sleep(2)
        raise TimeoutError(f"run {dag_id}/{run_id} did not finish within {timeout:.0f}s")

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str]:
        tis = self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")["task_instances"]
        return {ti["task_id"]: ti["state"] for ti in tis}
