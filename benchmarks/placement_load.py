"""The placement API under many concurrent clients: a real deployment, the load, and the invariant checks.

Shared by `benchmarks/bench_placement_load.py` (the figures) and
`tests/reliability/test_load_invariants.py` (the invariants, on a short run), so the test proves
exactly what the benchmark measures. Nothing is simulated on the server side: a real
`airflow api-server` process with the plugin, the example fleet as virtual clusters (capacity comes
from the capacity sync), and a fresh metadata DB (SQLite file or a PostgreSQL database made and
dropped here). The clients use the API as `PlacementHook` does: submit, wait for admission by
polling the placement, start, sometimes renew, release; some never start, so their leases lapse
and the admission cycles reclaim them.

The invariants are read from the DB afterwards. Over-commit is checked in the order the DB saw
the changes, by audit row ids (admit, release, reclaim): admissions and reclaims are written by
cycles, one at a time under the admission lock; a release numbers its audit row before it commits,
and a cycle that used the capacity it freed locked that placement's rows after that commit, so it
numbers its admissions later. A release that a cycle did not see yet only makes the sweep more
conservative. The same sweep by the rows' own timestamps is checked too: every write reads the
clock after taking its row locks, and a cycle after taking all of its own.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx

REPO = Path(__file__).resolve().parents[1]
FLEET_FILE = REPO / "examples" / "fleet.yaml"
Backend = Literal["sqlite", "postgres"]
API = "/mcsched/api/v1/placements"
# audit actions that end a reservation (each written in the same transaction as the end)
END_ACTIONS = ("placement.released", "placement.preempted", "placement.fail", "reservation.reclaim")
ENDED_STATES = {"released", "expired", "preempted", "failed"}
# what the clients ask for: (weight, ask); whole GPUs, so that GPUs are what runs out
ASKS: tuple[tuple[int, dict[str, Any]], ...] = (
    (4, {"kind": "inference", "gpus": 1, "cpu": 2, "memory_gib": 8}),
    (3, {"kind": "batch", "gpus": 2, "cpu": 4, "memory_gib": 16}),
    (2, {"kind": "inference", "gpus": 1, "gpu_types": ["Tesla-T4"], "cpu": 1, "memory_gib": 4}),
    (1, {"kind": "training", "gpus": 4, "gpu_types": ["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"]}),
)


@dataclass(frozen=True)
class LoadSettings:
    """The shape of a run. The lease is short so that abandoned grants are reclaimed within the run."""

    clients: int = 32
    seconds: float = 30.0
    lease_seconds: float = 6.0
    admission_interval_seconds: float = 1.0
    abandon_share: float = 0.1  # admitted, never started: the lease must lapse and be reclaimed
    renew_share: float = 0.3  # started, renewed once, then released
    hold_seconds: tuple[float, float] = (0.2, 0.8)
    poll_seconds: float = 0.2
    api_workers: int = 1
    seed: int = 7


# --- the deployment ---------------------------------------------------------------------------------


def _postgres_dsn(dbname: str) -> str:
    return f"postgresql://{os.environ.get('MCSCHED_TEST_PG_USER', 'postgres')}@127.0.0.1:5432/{dbname}"


@contextmanager
def fresh_metadata_db(backend: Backend, workdir: Path) -> Iterator[str]:
    """An empty metadata DB for one run, as a SQLAlchemy URL; a PostgreSQL database is dropped after."""
    if backend == "sqlite":
        yield f"sqlite:///{workdir / 'airflow.db'}"
        return
    import psycopg2

    dbname = f"mcsched_load_{os.getpid()}"
    admin = psycopg2.connect(_postgres_dsn("postgres"), connect_timeout=5)
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)")
            cur.execute(f"CREATE DATABASE {dbname}")
        yield _postgres_dsn(dbname).replace("postgresql://", "postgresql+psycopg2://")
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)")
        admin.close()


@dataclass(frozen=True)
class LoadTarget:
    """A running API server with the fleet applied and synced, and how to reach it."""

    url: str
    token: str
    db_url: str
    log_dir: Path


def _wait_for_capacity(url: str, token: str, timeout: float = 90.0) -> None:
    """Until the capacity sync has read every cluster: before that nothing can be admitted."""
    deadline = time.monotonic() + timeout
    headers = {"Authorization": f"Bearer {token}"}
    while time.monotonic() < deadline:
        clusters = httpx.get(f"{url}/mcsched/api/v1/clusters", headers=headers, timeout=10).json()["clusters"]
        if clusters and all(c["status"] and c["status"]["healthy"] for c in clusters):
            return
        time.sleep(1)
    raise TimeoutError(f"the capacity sync did not read every cluster within {timeout:.0f}s")


@contextmanager
def placement_server(backend: Backend, settings: LoadSettings, workdir: Path | None = None) -> Iterator[LoadTarget]:
    """Virtual fleet + `airflow api-server` (plugin inside) on a fresh DB, fleet applied and synced."""
    from airflow_mcsched.access.fleet_file import load_fleet_file
    from airflow_mcsched.cli.airflow_stack import AirflowStack
    from airflow_mcsched.virtual.fleet import VirtualFleet

    with tempfile.TemporaryDirectory(prefix="mcsched-load-") as tmp:
        home = Path(workdir or tmp)
        (home / "dags").mkdir(parents=True, exist_ok=True)
        policy = home / "policy.yaml"
        policy.write_text(f"lease_seconds: {settings.lease_seconds}\n")
        with (
            fresh_metadata_db(backend, home) as db_url,
            VirtualFleet.start(load_fleet_file(FLEET_FILE), mode="process", state_dir=home / "fleet") as fleet,
        ):
            stack = AirflowStack(
                home,
                db_url,
                home / "dags",
                jwt_secret="load-" + "l" * 64,
                components=("api-server",),
                extra_env={
                    **fleet.connection_env(),
                    "AIRFLOW__MCSCHED__POLICY_FILE": str(policy),
                    "AIRFLOW__MCSCHED__ADMISSION_INTERVAL_SECONDS": str(settings.admission_interval_seconds),
                    "AIRFLOW__API__WORKERS": str(settings.api_workers),
                    "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
                },
            )
            with stack:
                cli = str(Path(sys.executable).with_name("mcsched"))
                subprocess.run(
                    [cli, "clusters", "apply", "-f", str(FLEET_FILE)], env=stack.env(), check=True, capture_output=True
                )
                token = stack.token()
                _wait_for_capacity(stack.url, token)
                yield LoadTarget(stack.url, token, db_url, home / "logs" / "components")


# --- the clients -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One HTTP call: which endpoint, its status (0: no answer at all) and how long it took."""

    endpoint: str
    status: int
    seconds: float
    error: str = ""


@dataclass
class LoadRecord:
    """What the clients saw; the invariants compare it with the DB."""

    calls: list[Call] = field(default_factory=list)
    submitted: dict[str, str] = field(default_factory=dict)  # task key -> placement id (201)
    unanswered_submits: list[str] = field(default_factory=list)  # task keys whose POST got no 2xx/4xx
    admitted: set[str] = field(default_factory=set)
    abandoned: set[str] = field(default_factory=set)
    renewed: set[str] = field(default_factory=set)
    released: set[str] = field(default_factory=set)
    started_at: float = 0.0
    seconds: float = 0.0


class Client:
    """One simulated task: submit, wait for admission, start, maybe renew, release (or abandon)."""

    def __init__(self, index: int, http: httpx.AsyncClient, settings: LoadSettings, record: LoadRecord) -> None:
        self.index = index
        self.http = http
        self.settings = settings
        self.record = record
        self.rng = random.Random(settings.seed * 1000 + index)
        self.steps = 0

    async def call(self, endpoint: str, method: str, path: str, body: Any = None) -> httpx.Response | None:
        t0 = time.perf_counter()
        try:
            response = await self.http.request(method, path, json=body)
        except httpx.HTTPError as err:
            self.record.calls.append(Call(endpoint, 0, time.perf_counter() - t0, f"{type(err).__name__}: {err}"))
            return None
        error = "" if response.status_code < 500 else response.text[:300]
        self.record.calls.append(Call(endpoint, response.status_code, time.perf_counter() - t0, error))
        return response

    def next_submit(self) -> tuple[str, dict[str, Any]]:
        self.steps += 1
        ask = self.rng.choices([a for _, a in ASKS], weights=[w for w, _ in ASKS])[0]
        task = {"dag_id": "load_test", "run_id": f"client-{self.index:03d}", "task_id": f"step-{self.steps:06d}"}
        body = {
            "task": task,
            "ask": {**ask, "team": f"team-{self.index % 4}", "expected_duration_seconds": 60},
        }
        return f"{task['run_id']}/{task['task_id']}", body

    async def run(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            await self.one_placement(deadline)

    async def one_placement(self, deadline: float) -> None:
        key, body = self.next_submit()
        response = await self.call("submit", "POST", API, body)
        if response is None or response.status_code >= 500:
            self.record.unanswered_submits.append(key)
            return
        if response.status_code != 201:
            return  # a refusal is an answer; the ask table holds only valid asks, so errors show it
        placement = response.json()
        self.record.submitted[key] = placement["id"]
        state = await self.wait_for_admission(placement, deadline)
        pid = placement["id"]
        if state == "pending":
            await self.release(pid, "killed")  # the run is over: withdraw it
            return
        if state != "admitted":
            return
        self.record.admitted.add(pid)
        if self.rng.random() < self.settings.abandon_share:
            self.record.abandoned.add(pid)  # the worker "died": nobody starts, renews or releases it
            return
        await self.call("start", "POST", f"{API}/{pid}/start", {"pod_name": f"load-{pid[:12]}"})
        await asyncio.sleep(self.rng.uniform(*self.settings.hold_seconds))
        if self.rng.random() < self.settings.renew_share and await self.call("renew", "POST", f"{API}/{pid}/renew"):
            self.record.renewed.add(pid)
        await self.release(pid, "succeeded")

    async def wait_for_admission(self, placement: dict[str, Any], deadline: float) -> str:
        """Poll the placement (as the operator does) until it leaves PENDING or the run ends."""
        state = placement["state"]
        while state == "pending" and time.monotonic() < deadline:
            await asyncio.sleep(self.settings.poll_seconds)
            response = await self.call("get", "GET", f"{API}/{placement['id']}")
            if response is not None and response.status_code == 200:
                state = response.json()["state"]
        return state

    async def release(self, pid: str, outcome: str) -> None:
        response = await self.call("release", "POST", f"{API}/{pid}/release", {"outcome": outcome})
        if response is not None and response.status_code == 200:
            self.record.released.add(pid)


async def drive(target: LoadTarget, settings: LoadSettings) -> LoadRecord:
    """`settings.clients` concurrent clients for `settings.seconds`; each finishes what it holds."""
    record = LoadRecord()
    limits = httpx.Limits(max_connections=settings.clients, max_keepalive_connections=settings.clients)
    headers = {"Authorization": f"Bearer {target.token}"}
    async with httpx.AsyncClient(base_url=target.url, headers=headers, limits=limits, timeout=60) as http:
        record.started_at = time.monotonic()
        deadline = record.started_at + settings.seconds
        clients = [Client(i, http, settings, record) for i in range(settings.clients)]
        await asyncio.gather(*(c.run(deadline) for c in clients))
        record.seconds = time.monotonic() - record.started_at
    return record


# --- after the run ---------------------------------------------------------------------------------


def _engine(db_url: str):
    from sqlalchemy import create_engine

    return create_engine(db_url)


def drain(db_url: str, settings: LoadSettings, timeout: float | None = None) -> float:
    """Wait until nothing is pending and no reservation is active (abandoned leases lapse and the
    admission timer reclaims them); returns the seconds it took. Times out rather than hides."""
    from sqlalchemy import func, select

    from airflow_mcsched.service.tables import PlacementRow, ReservationRow

    engine = _engine(db_url)
    limit = timeout if timeout is not None else settings.lease_seconds + 10 * settings.admission_interval_seconds + 30
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < limit:
            with engine.connect() as conn:
                pending = conn.scalar(select(func.count()).where(PlacementRow.state == "pending"))
                active = conn.scalar(select(func.count()).where(ReservationRow.active.is_(True)))
            if not pending and not active:
                return time.monotonic() - t0
            time.sleep(0.5)
        return time.monotonic() - t0
    finally:
        engine.dispose()


@dataclass(frozen=True)
class Invariant:
    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class Grant:
    """A reservation as held capacity: where, how much per node, and its commit-ordered life."""

    placement_id: str
    cluster: str
    pool: str
    per_node: dict[str, float]
    granted_at: float
    ended_at: float | None
    admit_seq: int | None
    end_seq: int | None


@dataclass(frozen=True)
class DbState:
    """The rows the invariants read, loaded once after the drain."""

    placements: dict[str, dict[str, Any]]
    grants: list[Grant]
    active: list[str]
    pool_capacity: dict[tuple[str, str], float]
    node_capacity: dict[tuple[str, str], float]  # (cluster, pool) -> GPUs per node


def load_db_state(db_url: str) -> DbState:
    from sqlalchemy import select

    from airflow_mcsched.service.tables import AuditRow, NodePoolRow, PlacementRow, ReservationRow

    engine = _engine(db_url)
    try:
        with engine.connect() as conn:
            placements = {
                r.id: dict(r._mapping)
                for r in conn.execute(
                    select(
                        PlacementRow.id,
                        PlacementRow.state,
                        PlacementRow.decided_at,
                        PlacementRow.run_id,
                        PlacementRow.task_id,
                    )
                )
            }
            audits = conn.execute(
                select(AuditRow.id, AuditRow.action, AuditRow.subject)
                .where(AuditRow.action.in_(("placement.admit", *END_ACTIONS)))
                .order_by(AuditRow.id)
            ).all()
            reservations = conn.execute(select(ReservationRow)).all()
            pools = conn.execute(select(NodePoolRow)).all()
    finally:
        engine.dispose()
    admit_seq: dict[str, int] = {}
    end_seq: dict[str, int] = {}
    for seq, action, subject in audits:
        if action == "placement.admit":
            admit_seq.setdefault(subject, seq)
        elif subject in admit_seq:
            end_seq.setdefault(subject, seq)
    grants = []
    for r in reservations:
        per_node: dict[str, float] = defaultdict(float)
        for pod in r.pods:
            per_node[pod["node"]] += pod["gpus"] + pod.get("gpu_milli", 0) / 1000
        grants.append(
            Grant(
                r.placement_id,
                r.cluster,
                r.pool,
                dict(per_node),
                r.granted_at.timestamp(),
                None if r.ended_at is None else r.ended_at.timestamp(),
                admit_seq.get(r.placement_id),
                end_seq.get(r.placement_id),
            )
        )
    return DbState(
        placements=placements,
        grants=grants,
        active=[r.placement_id for r in reservations if r.active],
        pool_capacity={(p.cluster_name, p.name): float(p.nodes * p.gpus_per_node) for p in pools},
        node_capacity={(p.cluster_name, p.name): float(p.gpus_per_node) for p in pools},
    )


def peak_use(grants: list[Grant], order: Literal["commit", "timestamps"]) -> tuple[dict, dict]:
    """Sweep grants and ends in `order`; the highest GPUs held at once per pool and per node."""
    events: list[tuple[float, int, Grant]] = []  # (position, +1 grant / -1 end, grant); ends first on ties
    for g in grants:
        if order == "commit":
            events.append((float(g.admit_seq or 0), 1, g))
            if g.end_seq is not None:
                events.append((float(g.end_seq), -1, g))
        else:
            events.append((g.granted_at, 1, g))
            if g.ended_at is not None:
                events.append((g.ended_at, -1, g))
    events.sort(key=lambda e: (e[0], e[1]))
    pool_use: Counter[tuple[str, str]] = Counter()
    node_use: dict[tuple[str, str, str], float] = defaultdict(float)
    pool_peak: dict[tuple[str, str], float] = defaultdict(float)
    node_peak: dict[tuple[str, str, str], float] = defaultdict(float)
    for _, sign, g in events:
        pool = (g.cluster, g.pool)
        pool_use[pool] += sign * sum(g.per_node.values())
        pool_peak[pool] = max(pool_peak[pool], pool_use[pool])
        for node, gpus in g.per_node.items():
            key = (g.cluster, g.pool, node)
            node_use[key] += sign * gpus
            node_peak[key] = max(node_peak[key], node_use[key])
    return dict(pool_peak), dict(node_peak)


def _over_commit(state: DbState, order: Literal["commit", "timestamps"]) -> list[str]:
    pool_peak, node_peak = peak_use(state.grants, order)
    over = [
        f"pool {c}/{p}: {peak:g} > {state.pool_capacity[(c, p)]:g}"
        for (c, p), peak in pool_peak.items()
        if peak > state.pool_capacity[(c, p)] + 1e-9
    ]
    over += [
        f"node {c}/{p}/{n}: {peak:g} > {state.node_capacity[(c, p)]:g}"
        for (c, p, n), peak in node_peak.items()
        if peak > state.node_capacity[(c, p)] + 1e-9
    ]
    return over


def check_invariants(record: LoadRecord, state: DbState) -> list[Invariant]:
    """(a) no over-commit, (b) every grant ended, (c) every request answered and decided."""
    results = []
    # (a) in commit order, per pool and per node; every grant must be traceable in that order
    untraced = [g.placement_id for g in state.grants if g.admit_seq is None or (g.ended_at and g.end_seq is None)]
    over = _over_commit(state, "commit")
    pool_peak, _ = peak_use(state.grants, "commit")
    peaks = ", ".join(f"{c}/{p} {v:g}/{state.pool_capacity[(c, p)]:g}" for (c, p), v in sorted(pool_peak.items()))
    results.append(
        Invariant(
            "a. no pool or node over-committed at any moment (commit order)",
            not over and not untraced,
            f"{len(state.grants)} grants; peak GPUs held per pool: {peaks}"
            + (f"; OVER: {over[:5]}" if over else "")
            + (f"; grants without audit trail: {untraced[:5]}" if untraced else ""),
        )
    )
    ts_over = _over_commit(state, "timestamps")
    results.append(
        Invariant(
            "a'. same, by the rows' granted_at/ended_at timestamps",
            not ts_over,
            "no overlap beyond capacity" if not ts_over else f"overlaps by timestamps: {ts_over[:5]}",
        )
    )
    # (b) every granted reservation ended: released (after a renew or not) or reclaimed
    outcomes: Counter[str] = Counter()
    bad = list(state.active)
    for g in state.grants:
        placement = state.placements[g.placement_id]
        if g.ended_at is None or placement["state"] not in ENDED_STATES:
            bad.append(g.placement_id)
        elif placement["state"] == "released":
            outcomes["renewed and released" if g.placement_id in record.renewed else "released"] += 1
        elif placement["state"] == "expired":
            outcomes["reclaimed (lease lapsed)"] += 1
        else:
            outcomes[placement["state"]] += 1
    abandoned_not_reclaimed = [p for p in record.abandoned if state.placements[p]["state"] != "expired"]
    results.append(
        Invariant(
            "b. every granted reservation ended (released, renewed and released, or reclaimed)",
            not bad and not abandoned_not_reclaimed,
            ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items()))
            + f"; abandoned by clients: {len(record.abandoned)}"
            + (f"; STILL HELD: {sorted(set(bad))[:5]}" if bad else "")
            + (f"; abandoned but not reclaimed: {abandoned_not_reclaimed[:5]}" if abandoned_not_reclaimed else ""),
        )
    )
    # (c) every POST answered, and each answer is one row in the DB that reached a decision
    in_db = {f"{p['run_id']}/{p['task_id']}": pid for pid, p in state.placements.items()}
    lost = {k: v for k, v in record.submitted.items() if in_db.get(k) != v}
    unknown = set(in_db) - set(record.submitted) - set(record.unanswered_submits)
    undecided = [pid for pid, p in state.placements.items() if p["state"] == "pending" or p["decided_at"] is None]
    no_answer = [c for c in record.calls if c.status == 0 or c.status >= 500]
    states = Counter(p["state"] for p in state.placements.values())
    results.append(
        Invariant(
            "c. every request answered; every placement row decided",
            not lost and not unknown and not undecided and not no_answer and not record.unanswered_submits,
            f"{len(record.calls)} calls, {len(no_answer)} without a 2xx/4xx answer; {len(record.submitted)} "
            f"placements accepted, {len(state.placements)} rows; final states "
            + ", ".join(f"{k} {v}" for k, v in sorted(states.items()))
            + (f"; LOST: {list(lost)[:5]}" if lost else "")
            + (f"; rows nobody was told of: {sorted(unknown)[:5]}" if unknown else "")
            + (f"; UNDECIDED: {undecided[:5]}" if undecided else ""),
        )
    )
    return results


# --- figures ---------------------------------------------------------------------------------------


def _percentile(sorted_values: list[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(q / 100 * (len(sorted_values) - 1))))
    return sorted_values[index]


def summary(record: LoadRecord) -> dict[str, Any]:
    """Throughput and latency per endpoint (ms), and the errors by endpoint and status."""
    by_endpoint: dict[str, list[float]] = defaultdict(list)
    for c in record.calls:
        by_endpoint[c.endpoint].append(c.seconds * 1000)
    latency = {}
    for endpoint, values in sorted(by_endpoint.items()):
        values.sort()
        latency[endpoint] = {
            "n": len(values),
            "p50": _percentile(values, 50),
            "p95": _percentile(values, 95),
            "p99": _percentile(values, 99),
            "max": values[-1],
            "mean": statistics.fmean(values),
        }
    failed = [c for c in record.calls if c.status >= 400 or c.status == 0]
    errors = Counter(f"{c.endpoint} {c.status or c.error.split(':')[0]}" for c in failed)
    submits = sum(1 for c in record.calls if c.endpoint == "submit" and c.status)
    return {
        "seconds": record.seconds,
        "submissions_per_s": submits / record.seconds,
        "admissions_per_s": len(record.admitted) / record.seconds,
        "requests_per_s": len(record.calls) / record.seconds,
        "latency_ms": latency,
        "errors": dict(errors),
        "server_errors": [c.error for c in record.calls if c.status == 0 or c.status >= 500][:5],
    }


def format_report(backend: str, settings: LoadSettings, figures: dict[str, Any], invariants: list[Invariant]) -> str:
    lines = [
        f"{backend}: {settings.clients} clients for {figures['seconds']:.1f} s "
        f"(lease {settings.lease_seconds:g} s, admission timer {settings.admission_interval_seconds:g} s, "
        f"API workers {settings.api_workers})",
        f"placements submitted and answered: {figures['submissions_per_s']:.1f}/s; admitted: "
        f"{figures['admissions_per_s']:.1f}/s; all calls: {figures['requests_per_s']:.1f}/s",
        "",
        "| endpoint | calls | p50 ms | p95 ms | p99 ms | max ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for endpoint, s in figures["latency_ms"].items():
        lines.append(f"| {endpoint} | {s['n']} | {s['p50']:.1f} | {s['p95']:.1f} | {s['p99']:.1f} | {s['max']:.1f} |")
    lines += ["", f"errors: {figures['errors'] or 'none'}"]
    if figures["server_errors"]:
        lines.append(f"first server errors: {figures['server_errors']}")
    lines.append("")
    lines += [f"[{'ok' if i.ok else 'FAILED'}] {i.name}: {i.detail}" for i in invariants]
    return "\n".join(lines)


@dataclass(frozen=True)
class LoadOutcome:
    figures: dict[str, Any]
    invariants: list[Invariant]
    drain_seconds: float


def run_load(backend: Backend, settings: LoadSettings, workdir: Path | None = None) -> LoadOutcome:
    """The whole run: deployment up, load, drain, invariants read from the DB, deployment down."""
    with placement_server(backend, settings, workdir) as target:
        record = asyncio.run(drive(target, settings))
        drained = drain(target.db_url, settings)
        state = load_db_state(target.db_url)
    return LoadOutcome(summary(record), check_invariants(record, state), drained)
