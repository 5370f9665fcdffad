"""The distributed path, runnable as a test or as a script: Airflow with the CeleryExecutor (Redis
broker) and two Celery workers against one fresh PostgreSQL metadata DB, the API server (with the
placement service), scheduler, DAG processor and triggerer as separate processes, and the example
fleet as virtual clusters. Concurrent DAG runs place GPU steps from both workers at once; the
invariants are then read back from our own tables, not from what the service says about itself.

    .venv/bin/python -m tests.distributed.celery_scenario     # prints the summary, exits 1 on a broken invariant

Why a module and not only a test: a deployment question ("does it hold with Celery?") should be
answerable without pytest, and the test and the script must check the same things.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, select, text

from airflow_mcsched.access.fleet_file import load_fleet_file
from airflow_mcsched.access.profiles import FleetSpec
from airflow_mcsched.cli.airflow_stack import AirflowStack
from airflow_mcsched.service.tables import PlacementRow, ReservationRow
from airflow_mcsched.virtual.fleet import VirtualFleet
from airflow_mcsched.virtual.options import VirtualClusterOptions
from tests.conftest import postgres_available, postgres_url
from tests.e2e.conftest import Deployment
from tests.stack_watch import StackWatch, stack_env

REPO = Path(__file__).resolve().parents[2]
FLEET_FILE = REPO / "examples" / "fleet.yaml"
DAG_FILE = Path(__file__).parent / "dags" / "distributed_steps.py"
DAG_ID = "distributed_gpu_steps"  # the DAG file's; not imported, as that would load Airflow here
WORKERS = ("worker-1", "worker-2")
RUNS = 4
SLOTS = 8  # Celery task slots over both workers: every step of the four runs can ask at once


def redis_url() -> str:
    return os.environ.get("MCSCHED_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def redis_available(url: str) -> bool:
    """A raw PING, so that the check needs neither the redis client nor a Celery app."""
    from urllib.parse import urlparse

    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379), timeout=3) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def fresh_database() -> Iterator[str]:
    """A new, empty PostgreSQL database for this run only (the stack migrates it), dropped after:
    a shared DB would mix another test's placements into the over-commit check. The name is
    random, not the process id, so another fixture of the same test process cannot take it."""
    name = f"mcsched_celery_{secrets.token_hex(4)}"
    # CREATE DATABASE refuses to run inside a transaction
    server = create_engine(postgres_url("postgres"), isolation_level="AUTOCOMMIT")
    with server.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield postgres_url(name)
    finally:
        with server.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        server.dispose()


def forget_queue(url: str, queue: str) -> None:
    """Celery leaves its binding keys for the queue in Redis; a per-run queue should not pile up."""
    import redis

    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(match=f"*{queue}*"))
    if keys:
        client.delete(*keys)
    client.close()


@contextmanager
def celery_deployment(home: Path) -> Iterator[Deployment]:
    """Fleet, fresh DB, and the whole Celery-shaped Airflow stack, with the fleet applied."""
    dags = home / "dags"
    dags.mkdir(parents=True, exist_ok=True)
    shutil.copy(DAG_FILE, dags / DAG_FILE.name)
    queue = f"mcsched_{secrets.token_hex(4)}"  # other stacks on the same broker never see our tasks
    options = VirtualClusterOptions(default_duration_seconds=1.0, container_start_seconds=0.1)
    with (
        VirtualFleet.start(
            load_fleet_file(FLEET_FILE), mode="process", options=options, state_dir=home / "virtual-clusters"
        ) as fleet,
        fresh_database() as url,
    ):
        stack = AirflowStack(
            home, url, dags, jwt_secret="celery-" + secrets.token_hex(32),
            extra_env={**fleet.connection_env(), "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO", **stack_env()},
            parallelism=SLOTS, executor="CeleryExecutor", broker_url=redis_url(),
            celery_workers=WORKERS, celery_concurrency=SLOTS // len(WORKERS), celery_queue=queue,
        )  # fmt: skip
        try:
            with stack:
                deployment = Deployment(stack, fleet, dags, StackWatch.of(stack))
                deployment.mcsched("clusters", "apply", "-f", str(FLEET_FILE))
                yield deployment
        finally:
            forget_queue(redis_url(), queue)


@dataclass
class Outcome:
    """What the runs did, as read from Airflow's REST API and from our tables."""

    run_states: dict[str, str]
    hostnames: dict[tuple[str, str], str]  # (run_id, task_id) -> the worker that ran it
    placements: list[PlacementRow]
    reservations: list[ReservationRow]
    wall_seconds: float

    @property
    def workers(self) -> set[str]:
        return set(self.hostnames.values())


def run_concurrently(deployment: Deployment, runs: int = RUNS, timeout: float = 150.0) -> Outcome:
    """Trigger `runs` runs at once, wait for all, and collect hostnames and our rows."""
    stack = deployment.stack
    stack.wait_for_dag(DAG_ID)
    started = time.monotonic()
    run_ids = [stack.trigger(DAG_ID, run_id=f"celery_{i}_{secrets.token_hex(3)}") for i in range(runs)]
    deadline = time.monotonic() + timeout
    states = {r: stack.wait_for_run(DAG_ID, r, timeout=max(1.0, deadline - time.monotonic())) for r in run_ids}
    wall = time.monotonic() - started
    hostnames: dict[tuple[str, str], str] = {}
    for run_id in run_ids:
        tis = stack.api("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances")["task_instances"]
        hostnames.update({(run_id, ti["task_id"]): ti["hostname"] for ti in tis})
    engine = create_engine(stack.sql_alchemy_conn)
    try:
        with engine.connect() as conn:
            rows = list(conn.execute(select(PlacementRow).where(PlacementRow.dag_id == DAG_ID)))
            placements = [PlacementRow(**row._mapping) for row in rows]
            reservations = [ReservationRow(**row._mapping) for row in conn.execute(select(ReservationRow))]
    finally:
        engine.dispose()
    return Outcome(states, hostnames, placements, reservations, wall)


def peak_gpus_held(placements: list[PlacementRow]) -> dict[tuple[str, str], float]:
    """The most GPUs held at once in each (cluster, pool), from the [admitted_at, ended_at)
    intervals. At equal times a release counts before an admission: the service frees capacity
    and grants it in one cycle, which is not an over-commit."""
    return {key: peak for key, (peak, _) in _peaks(placements).items()}


def _peaks(placements: list[PlacementRow]) -> dict[tuple[str, str], tuple[float, list[PlacementRow]]]:
    """Per (cluster, pool): the peak, and the placements held at its first moment."""
    events: dict[tuple[str, str], list[tuple[datetime, int, PlacementRow]]] = defaultdict(list)
    for p in placements:
        if p.admitted_at is None or p.cluster is None or p.pool is None:
            continue
        end = p.ended_at or datetime.max.replace(tzinfo=p.admitted_at.tzinfo)
        events[(p.cluster, p.pool)] += [(p.admitted_at, 1, p), (end, 0, p)]
    peaks: dict[tuple[str, str], tuple[float, list[PlacementRow]]] = {}
    for key, evs in events.items():
        held: dict[str, PlacementRow] = {}
        peak, at_peak = 0.0, []
        for _, starts, p in sorted(evs, key=lambda e: (e[0], e[1])):
            if starts:
                held[p.id] = p
            else:
                held.pop(p.id, None)
            total = sum(h.gpus for h in held.values())
            if total > peak:
                peak, at_peak = total, list(held.values())
        peaks[key] = (peak, at_peak)
    return peaks


def _held_at_peak(placements: list[PlacementRow], reservations: list[ReservationRow]) -> str:
    """Who held what at an over-committed peak: enough to find the cause from a CI log alone."""
    nodes = {r.placement_id: sorted({pod["node"] for pod in r.pods}) for r in reservations}
    return "; ".join(
        f"{p.id[:8]} ({p.run_id}/{p.task_id}) {p.gpus:g} GPUs on {','.join(nodes.get(p.id, ['?']))}"
        f" from {p.admitted_at:%H:%M:%S.%f} to {'-' if p.ended_at is None else f'{p.ended_at:%H:%M:%S.%f}'}"
        for p in placements
    )


def overlapping_across_workers(outcome: Outcome) -> bool:
    """Did a step on one worker hold its placement while a step on the other worker held its own?"""
    spans = [
        (outcome.hostnames.get((p.run_id, p.task_id)), p.admitted_at, p.ended_at)
        for p in outcome.placements
        if p.admitted_at and p.ended_at
    ]
    return any(h1 != h2 and a1 < e2 and a2 < e1 for h1, a1, e1 in spans for h2, a2, e2 in spans)


def violations(outcome: Outcome, fleet: FleetSpec) -> list[str]:
    """Every broken invariant, in words (empty when the run is right)."""
    problems = [f"run {r} ended {s}" for r, s in outcome.run_states.items() if s != "success"]
    if outcome.workers != set(WORKERS):
        problems.append(f"tasks ran on {sorted(outcome.workers)}, not on both of {list(WORKERS)}")
    if not overlapping_across_workers(outcome):
        problems.append("no two steps on different workers held GPUs at the same time")
    if len(outcome.placements) < len(outcome.hostnames):
        problems.append(f"only {len(outcome.placements)} placements for {len(outcome.hostnames)} steps")
    for (cluster, pool), (peak, held) in sorted(_peaks(outcome.placements).items()):
        capacity = fleet.cluster(cluster).pool(pool).total_gpus
        if peak > capacity:
            who = _held_at_peak(held, outcome.reservations)
            problems.append(f"{cluster}/{pool} held {peak:g} GPUs at once, capacity {capacity}: {who}")
    problems += [
        f"placement {p.id} ({p.run_id}/{p.task_id}) ended {p.state}, {p.end_reason!r}"
        for p in outcome.placements
        if p.state != "released" or p.ended_at is None
    ]
    problems += [f"reservation {r.id} still active" for r in outcome.reservations if r.active or r.ended_at is None]
    return problems


def summary(outcome: Outcome) -> dict[str, Any]:
    per_worker: dict[str, int] = defaultdict(int)
    for host in outcome.hostnames.values():
        per_worker[host] += 1
    return {
        "wall_seconds": round(outcome.wall_seconds, 1),
        "runs": outcome.run_states,
        "tasks_per_worker": dict(per_worker),
        "longest_wait_for_admission_seconds": max(
            ((p.admitted_at - p.queued_at).total_seconds() for p in outcome.placements if p.admitted_at), default=0.0
        ),
        "peak_gpus_per_pool": {f"{c}/{p}": v for (c, p), v in sorted(peak_gpus_held(outcome.placements).items())},
        "placements": len(outcome.placements),
        "reservations": len(outcome.reservations),
    }


def main() -> int:
    import json
    import tempfile

    if not (redis_available(redis_url()) and postgres_available()):
        print("needs Redis and PostgreSQL on 127.0.0.1 (.ci/ensure-redis, .ci/ensure-postgres)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="mcsched-celery-") as home, celery_deployment(Path(home)) as deployment:
        outcome = run_concurrently(deployment)
        problems = violations(outcome, deployment.fleet.spec)
    print(json.dumps(summary(outcome), indent=2))
    for problem in problems:
        print("VIOLATION:", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
