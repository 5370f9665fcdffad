"""One admission cycle of the placement service, end to end: the queue read from the database,
decided by the engine, and every decision written back (`PlacementStore.run_cycle`, what the API
server runs on every submit, release, sync and timer tick).

    .venv/bin/python benchmarks/bench_service_cycle.py [--clusters 100] [--queue steps|random] [--cycles 6]
    .venv/bin/python benchmarks/bench_service_cycle.py --url postgresql+psycopg2:///bench_cycle
    .venv/bin/python benchmarks/bench_service_cycle.py --fresh-policy   # as the service was before session 16
    .venv/bin/python benchmarks/bench_service_cycle.py --queue random --busy-file /tmp/full.pickle   # a full fleet
    .venv/bin/python benchmarks/bench_service_cycle.py --queue random --busy-file /tmp/full.pickle --renew-all

The fleet and queues of `bench_engine.py` (seed 1) in a new database that holds the project's
tables only (the store needs nothing of Airflow's): the clusters' profiles and capacity reads, and
1,000 pending placements (its running reservations are left out: the reads show their GPUs in
use). Every cycle runs in a transaction that is rolled back, so each decides the same queue on
the same rows, while what the engine keeps between cycles (plans, rankings, the view built from
unchanged rows) stays, as in the API server. `--fresh-policy` hands every cycle a new default
`Policy()`: the engine keeps its memory per policy object, so each cycle then starts from nothing.

`--renew-all`: every cluster's read answers that it holds a pod of every reservation
(`ClusterView.holds_pod_of`, which only the lease renewal, the idle reclaim and the reclaim's
messages ask; the capacity reads are unchanged), so every cycle renews every held lease, as on a
fleet whose pods run: with `--busy-file`, 27,000 leases written each cycle. No reservation is then
idle (its pod shows), so fewer are reclaimed and fewer requests admitted (121 against 133).

`--busy-file PATH`: on a full fleet, the running work of `engine_cycles.py --busy` (about 27,000
reservations at 100 clusters, pickled at PATH as that script keeps it, made there when absent:
minutes), each with its admitted placement, held as active reservations (not yet seen by the
reads, as in the engine's benchmark): every cycle locks and reads them all and hands them to the
engine, where most of the queue waits and some of it preempts.

Prints, per cycle, wall ms of the whole cycle and of its parts: the engine (`decide`), writing
the decisions (`_record`), and the rest (the lock, reading rows and the view, building requests
and reservations).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_engine import NOW, filled_at, fleet_and_queues
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from airflow_mcsched.access.profiles import FleetSpec
from airflow_mcsched.decision import PlacementRequest, Policy, Reservation, decide
from airflow_mcsched.service import placement_store
from airflow_mcsched.service.cluster_store import ClusterStore
from airflow_mcsched.service.placement_mapping import reservation_row
from airflow_mcsched.service.placement_store import PlacementStore
from airflow_mcsched.service.status_store import StatusStore
from airflow_mcsched.service.stored_explanations import StoredExplanations
from airflow_mcsched.service.tables import PlacementRow, metadata
from airflow_mcsched.view.snapshot import ClusterView


def _placement(row_id: str, run_id: str, state: str, **values) -> PlacementRow:
    """A placement of the benchmark's DAG, one task per placement (named as the row)."""
    return PlacementRow(
        id=row_id, dag_id="bench", run_id=run_id, task_id=row_id, state=state, ask={}, submitted_by="bench", **values
    )


def _row(r: PlacementRequest) -> PlacementRow:
    """A pending placement as `PlacementStore.submit` would queue the request (its id is the row's)."""
    return _placement(
        r.id,
        "cycle",
        "pending",
        team=r.team,
        project=r.project,
        priority_class=r.priority_class,
        kind=r.kind.value,
        interruptible=r.interruptible,
        request=r.model_dump(mode="json"),
        queued_at=r.arrival,
        gpus=r.gpu_equivalent,
    )


def _held(r: Reservation, request: dict, explanation: dict) -> PlacementRow:
    """The admitted placement of running work `r` (what the cycle locks with its reservation), with
    a request's and an admission's JSON of the sizes the service stores."""
    return _placement(
        r.request_id,
        "running",
        "admitted",
        team=r.team,
        project=r.project,
        priority_class=r.priority_class,
        kind="batch",
        interruptible=r.interruptible,
        request=request,
        explanation=explanation,
        queued_at=r.granted_at,
        decided_at=r.granted_at,
        admitted_at=r.granted_at,
        cluster=r.cluster,
        pool=r.pool,
        gpu_type=r.gpu_type,
        gpus=r.gpu_equivalent,
        price_per_gpu_hour=r.price_per_gpu_hour,
    )


def load(url: str, clusters: int, queue_kind: str, busy_file: str | None = None) -> int:
    """Fill a new database; the number of active reservations it holds."""
    rng = random.Random(1)
    profiles, observations, running, view, templated, random_queue = fleet_and_queues(clusters, rng)
    queue = templated if queue_kind == "steps" else random_queue
    held = filled_at((clusters, queue_kind), view, queue, running, busy_file) if busy_file else []
    engine = create_engine(url)
    metadata.drop_all(engine)
    metadata.create_all(engine)
    with Session(engine) as session:
        ClusterStore(session).apply(FleetSpec(clusters=profiles), actor="bench")
        statuses = StatusStore(session)
        for obs in observations:
            statuses.record(obs)
        session.add_all(_row(r) for r in queue)
        if held:  # one admission's request and explanation, as stored, for every held placement
            admitted = next(d for d in decide(view, queue[:20], [], Policy(), NOW).decisions if d.placement)
            request = next(r for r in queue if r.id == admitted.request_id).model_dump(mode="json")
            explanation = StoredExplanations()(admitted, NOW).value
            session.add_all(_held(r, request, explanation) for r in held)
        session.flush()
        session.add_all(reservation_row(r) for r in held)
        session.commit()
    engine.dispose()
    return len(held)


class _Timed:
    """Wall seconds spent in one function, summed over calls, while installed on its owner."""

    def __init__(self, owner: object, name: str) -> None:
        self.seconds = 0.0
        inner: Callable = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        setattr(owner, name, timed)


def cycles(url: str, n: int, fresh_policy: bool) -> list[tuple[float, float, float, int]]:
    """(whole, engine, writing, admitted) per cycle, in ms and count."""
    engine = create_engine(url)
    decide = _Timed(placement_store, "decide")
    record = _Timed(PlacementStore, "_record")
    policy = Policy()
    out = []
    for _ in range(n):
        decide.seconds = record.seconds = 0.0
        with Session(engine) as session:
            start = time.perf_counter()
            report = PlacementStore(session, Policy() if fresh_policy else policy).run_cycle(NOW)
            session.flush()
            whole = time.perf_counter() - start
            session.rollback()
        out.append((whole * 1e3, decide.seconds * 1e3, record.seconds * 1e3, report.admitted))
    engine.dispose()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--queue", choices=["steps", "random"], default="steps")
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument(
        "--url", help="a database to fill (its project tables are dropped first); default: a new SQLite file"
    )
    parser.add_argument(
        "--fresh-policy", action="store_true", help="a new Policy() per cycle (the service before session 16)"
    )
    parser.add_argument("--busy-file", help="on a full fleet: its running work, pickled (see above)")
    parser.add_argument("--renew-all", action="store_true", help="every lease renewed by sight each cycle (see above)")
    args = parser.parse_args()
    if args.renew_all:
        ClusterView.holds_pod_of = lambda self, reservation_id: True  # type: ignore[method-assign]
    url = args.url or f"sqlite:///{Path(tempfile.mkdtemp(prefix='mcsched-cycle-')) / 'cycle.db'}"
    held = load(url, args.clusters, args.queue, args.busy_file)
    policies = "a new policy per cycle" if args.fresh_policy else "one policy"
    policies += ", every lease renewed" if args.renew_all else ""
    print(f"{args.clusters} clusters, 1,000 pending ({args.queue}), {held:,} active reservations, "
          f"{url.split(':')[0]}, {policies}; wall ms")  # fmt: skip
    print(f"{'cycle':>5} {'whole':>8} {'engine':>8} {'writing':>8} {'the rest':>8} {'admitted':>8}")
    for i, (whole, engine, writing, admitted) in enumerate(cycles(url, args.cycles, args.fresh_policy), 1):
        print(f"{i:>5} {whole:>8.0f} {engine:>8.0f} {writing:>8.0f} {whole - engine - writing:>8.0f} {admitted:>8}")


if __name__ == "__main__":
    main()
