"""Micro-benchmark of the placement engine: view build, one decision, and a whole admission cycle.

    .venv/bin/python benchmarks/bench_engine.py [--runs 7] [--seed 1] [--weight whole_nodes=0] [--runners-up 0]

Synthetic fleet, seeded: every cluster has an 8-GPU pool, a 4-GPU pool and a CPU pool (12, 8 and
4 nodes), GPU types and prices drawn from a small catalogue, about half the GPUs in use. The
queue mixes whole-GPU pods, 8-GPU pods, gangs, GPU shares and CPU-only pods from 10 teams.
Figures are medians of `--runs` runs, each decision timed four ways: on the same view object as
the run before (what the engine learnt of the view is reused, see decision/plan_cache.py); on a new
view built from a new capacity read that found the fleet unchanged (a sync between cycles: the view
builder hands every unchanged pool the capacity object of its last read, so what the engine
learnt of it still holds); on a new view where a tenth of the pools read differently (one node's
CPU use changed; those pools are judged again); and with nothing remembered (the first cycle on a
fleet).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pickle
import random
import statistics
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import islice

from airflow_mcsched.access.capacity import ClusterObservation, NodeObservation
from airflow_mcsched.access.profiles import ClusterProfile, DataLocality, NodePool, WorkKind
from airflow_mcsched.decision import AdmissionResult, PlacementRequest, Policy, Reservation, decide, plan_cache
from airflow_mcsched.view import GlobalView, NodeAllocation, build_view

NOW = datetime(2026, 1, 5, 12, tzinfo=UTC)
CATALOGUE = {"A100": 2.0, "H100": 4.0, "L4": 0.8, "T4": 0.35, "V100": 1.5, "A10": 1.1}
TEAMS = [f"team-{i}" for i in range(10)]


def make_fleet(clusters: int, rng: random.Random) -> tuple[list[ClusterProfile], list[ClusterObservation]]:
    profiles, observations = [], []
    types = sorted(CATALOGUE)
    for c in range(clusters):
        big, small = rng.sample(types, 2)
        factor = rng.choice([0.6, 1.0, 1.3])
        pools = [
            NodePool(
                name="big",
                gpu_type=big,
                gpu_memory_gib=80,
                gpus_per_node=8,
                nodes=12,
                interconnect=["nvlink", "infiniband"] if rng.random() < 0.5 else ["ethernet"],
                price_per_gpu_hour=round(CATALOGUE[big] * factor, 2),
                spot_price_per_gpu_hour=round(CATALOGUE[big] * factor * 0.4, 2) if rng.random() < 0.5 else None,
            ),
            NodePool(
                name="small",
                gpu_type=small,
                gpu_memory_gib=24,
                gpus_per_node=4,
                nodes=8,
                gpu_sharing=rng.random() < 0.5,
                price_per_gpu_hour=round(CATALOGUE[small] * factor, 2),
            ),
            NodePool(name="cpu", nodes=4),
        ]
        name = f"c{c:04d}"
        profile = ClusterProfile(
            name=name,
            region=f"r{c % 7}",
            node_pools=pools,
            data=DataLocality(datasets=[f"ds-{c % 20}"], egress_price_per_gib=0.05),
        )
        nodes = []
        for p in pools:
            for i in range(p.nodes):
                used = rng.randint(0, p.gpus_per_node)
                milli = [0] * used + [1000] * (p.gpus_per_node - used)
                if p.gpu_sharing and milli and rng.random() < 0.3:
                    milli[-1] = rng.choice([200, 500, 700])
                nodes.append(
                    NodeObservation(
                        name=f"{name}-{p.name}-{i}",
                        pool=p.name,
                        gpu_type=p.gpu_type,
                        cpu_milli_allocatable=64000,
                        memory_mib_allocatable=256 * 1024,
                        cpu_milli_requested=rng.randint(0, 32) * 1000,
                        memory_mib_requested=rng.randint(0, 128) * 1024,
                        gpu_milli_free=tuple(sorted(milli, reverse=True)),
                    )
                )
        profiles.append(profile)
        observations.append(ClusterObservation(name, NOW - timedelta(seconds=30), tuple(nodes)))
    return profiles, observations


def make_queue(n: int, rng: random.Random, templates: int = 0) -> list[PlacementRequest]:
    """`templates` > 0: requests are instances of that many DAG steps (shape, kind, GPU types, data,
    duration, interruptible, priority), team and arrival varying; 0: every field drawn per request."""
    if templates:
        steps = make_queue(templates, rng)
        return [
            steps[rng.randrange(templates)].model_copy(
                update={"id": f"req-{i:05d}", "arrival": NOW - timedelta(seconds=n - i), "team": rng.choice(TEAMS)}
            )
            for i in range(n)
        ]
    out = []
    for i in range(n):
        shape = rng.random()
        kw: dict = {}
        if shape < 0.45:
            kw["gpus"] = rng.choice([1, 1, 2, 4])
        elif shape < 0.6:
            kw["gpus"] = 8
        elif shape < 0.65:
            kw.update(gpus=8, pods=rng.choice([2, 4]), needs_rdma=True)
        elif shape < 0.8:
            kw["gpu_milli"] = rng.choice([250, 500])
        else:
            kw["cpu"] = rng.choice([2, 4, 8])
        if kw.get("gpus") and rng.random() < 0.5:
            kw["gpu_types"] = tuple(rng.sample(sorted(CATALOGUE), 2))
        if rng.random() < 0.2:
            kw["data"] = [{"location": f"ds-{rng.randrange(20)}", "size_gib": rng.choice([10, 100, 500])}]
        out.append(
            PlacementRequest(
                id=f"req-{i:05d}",
                arrival=NOW - timedelta(seconds=n - i),
                team=rng.choice(TEAMS),
                kind=rng.choice(list(WorkKind)),
                interruptible=rng.random() < 0.3,
                priority_class=rng.choice(["low", "normal", "normal", "high"]),
                expected_duration=timedelta(minutes=rng.choice([10, 30, 60, 240])),
                **kw,
            )
        )
    return out


def make_running(view, n: int, rng: random.Random) -> list[Reservation]:
    """Reservations of ours on random GPU nodes (1 GPU each); `with_seen` marks most pods as seen."""
    out = []
    pools = [p for p in view.pools if p.gpu_type and p.capacity.nodes]
    for i in range(n):
        p = rng.choice(pools)
        node = rng.choice(p.capacity.nodes)
        out.append(
            Reservation(
                id=f"run-{i}",
                request_id=f"old-{i}",
                cluster=p.cluster,
                pool=p.name,
                pods=(NodeAllocation(node.name, 1, 0, 1000, 1024),),
                team=rng.choice(TEAMS),
                priority=rng.choice([0, 100]),
                interruptible=rng.random() < 0.5,
                price_per_gpu_hour=p.price_per_gpu_hour,
                granted_at=NOW - timedelta(hours=1),
                expires_at=NOW + timedelta(hours=1),
                expected_end=NOW + timedelta(minutes=rng.randint(1, 600)),
                gpu_type=p.gpu_type,
            )
        )
    return out


def with_seen(observations: list[ClusterObservation], running: list[Reservation], rng: random.Random):
    """The steady state: pods of 95 % of running reservations already show in the capacity reads."""
    seen: dict[str, set[str]] = {}
    for r in running:
        if rng.random() < 0.95:
            seen.setdefault(r.cluster, set()).add(r.id)
    return [
        ClusterObservation(o.cluster, o.observed_at, o.nodes, reservation_ids_seen=frozenset(seen.get(o.cluster, ())))
        for o in observations
    ]


def running_and_queues(
    profiles: list[ClusterProfile],
    observations: list[ClusterObservation],
    rng: random.Random,
    queue: int = 1000,
    steps: int = 50,
):
    """Running work on a fleet from `make_fleet` (5 reservations per cluster, seen in the reads) and
    the queues: (reads, running reservations, view, `queue` requests made of `steps` DAG steps,
    `queue` all-different requests)."""
    running = make_running(build_view(profiles, observations, NOW), 5 * len(profiles), rng)
    observations = with_seen(observations, running, rng)
    view = build_view(profiles, observations, NOW)
    return observations, running, view, make_queue(queue, rng, templates=steps), make_queue(queue, rng)


def fleet_and_queues(clusters: int, rng: random.Random):
    """The benchmark's fleet with its running work seen, as `main` makes it: (profiles, reads, running
    reservations, view, 1,000 templated steps, 1,000 all-different requests)."""
    profiles, observations = make_fleet(clusters, rng)
    return (profiles, *running_and_queues(profiles, observations, rng))


def fill(view, queue: list, running: list) -> list:
    """The running work once the fleet is full: cycles over batches of 1,000 other requests like
    `queue`'s (ids renamed, arrivals earlier) until one admits fewer than 100 of them, each cycle's
    grants added and the work it preempted gone. Nothing of those cycles stays remembered."""
    batch = 0
    while True:
        batch += 1
        earlier = [
            r.model_copy(update={"id": f"fill{batch}-{r.id}", "arrival": r.arrival - timedelta(hours=batch)})
            for r in queue
        ]
        result = decide(view, earlier, running, Policy(), NOW)
        stopped = {v.reservation_id for v in result.preemptions}
        running = [*(r for r in running if r.id not in stopped), *result.reservations]
        if len(result.reservations) < 100:
            plan_cache.forget_all()
            return running


_FILLED: dict[tuple, list] = {}


def filled(key: tuple, view, queue: list, running: list) -> list:
    """`fill`, once per process for each `key` (the fleet and queue the arguments stand for): the
    full fleet depends on neither the policy measured nor the pass, and takes minutes to make."""
    if key not in _FILLED:
        _FILLED[key] = fill(view, queue, running)
    return _FILLED[key]


def filled_at(key: tuple, view, queue: list, running: list, path: str | None) -> list:
    """`filled`, or, with `path`, the work it made once, pickled there (made and written when absent):
    runs that alternate two versions of the engine on one full fleet skip the minutes of filling."""
    if path is None:
        return filled(key, view, queue, running)
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    work = filled(key, view, queue, running)
    with open(path, "wb") as f:
        pickle.dump(work, f)
    return work


def median_seconds(
    fn: Callable[[], object], runs: int, before: Callable[[], object] | None = None
) -> tuple[float, float]:
    """Median wall-clock and median CPU seconds (CPU time is steadier on a shared machine); `before`
    is called ahead of each run, untimed."""
    wall, cpu = [], []
    for _ in range(runs):
        if before is not None:
            before()
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def new_reads(profiles: list[ClusterProfile], observations: list[ClusterObservation], n: int) -> list[GlobalView]:
    """Views built anew from the same reads: same layout, new capacity objects (a sync's new view)."""
    return [build_view(profiles, observations, NOW) for _ in range(n)]


def changed_reads(
    profiles: list[ClusterProfile],
    observations: list[ClusterObservation],
    n: int,
    rng: random.Random,
    *,
    drift: bool = False,
) -> list[GlobalView]:
    """`n` views of `changed_views`, made now."""
    return list(islice(changed_views(profiles, observations, rng, drift=drift), n))


def changed_views(
    profiles: list[ClusterProfile],
    observations: list[ClusterObservation],
    rng: random.Random,
    *,
    drift: bool = False,
) -> Iterator[GlobalView]:
    """Views built anew, one as each is asked for, where a tenth of the pools (drawn per view) read
    differently: the first node of each drawn pool has a little more CPU in use than in any read
    before (so its capacity is new).

    Each view changes the benchmark's own reads, so a pool drawn for one view reads as first in the
    next. With `drift`, each changes the reads of the view before instead: the fleet drifts, as a
    live one does, and no pool reads again as it did (what a cycle kept of the first reads ages)."""
    while True:
        changed = changed_nodes(observations, rng, _more_cpu_in_use)
        yield build_view(profiles, changed, NOW)
        if drift:
            observations = changed


def changed_nodes(
    observations: list[ClusterObservation],
    rng: random.Random,
    change: Callable[[NodeObservation], NodeObservation],
    share: float = 0.1,
) -> list[ClusterObservation]:
    """The reads with the first node of each of a `share` of the pools (drawn) changed by `change`."""
    pools = list(dict.fromkeys((o.cluster, node.pool) for o in observations for node in o.nodes))
    drawn = set(rng.sample(pools, max(1, round(len(pools) * share))))
    changed = []
    for o in observations:
        nodes, done = list(o.nodes), set()
        for i, node in enumerate(nodes):
            key = (o.cluster, node.pool)
            if key in drawn and key not in done:
                done.add(key)
                nodes[i] = change(node)
        changed.append(dataclasses.replace(o, nodes=tuple(nodes)))
    return changed


def _more_cpu_in_use(node: NodeObservation) -> NodeObservation:
    return dataclasses.replace(node, cpu_milli_requested=node.cpu_milli_requested + next(_reads_changed))


_reads_changed = iter(range(1, 10**9))  # each changed read differs from every read before it


def median_per_view(
    fn: Callable[[GlobalView], object], views: list[GlobalView], forget: bool = False
) -> tuple[float, float]:
    """`median_seconds` with each run on its own view (made beforehand, not timed); `forget`: with
    nothing remembered from earlier runs."""
    todo = iter(views)
    return median_seconds(lambda: fn(next(todo)), len(views), before=plan_cache.forget_all if forget else None)


def add_policy_options(parser: argparse.ArgumentParser) -> None:
    """`--weight SCORE=W` (repeatable) and `--runners-up N`: the policy measured, when not the default."""
    parser.add_argument(
        "--weight", action="append", default=[], metavar="SCORE=W", help="a score weight other than the default"
    )
    parser.add_argument(
        "--runners-up", type=int, default=None, help="runners-up explained per admission (default: the policy's)"
    )


def policy_of(args: argparse.Namespace) -> Policy:
    """The policy `add_policy_options` asked for, said when it is not the default."""
    weights = {name: float(w) for name, w in (item.split("=", 1) for item in args.weight)}
    policy = Policy(weights=weights)
    if args.runners_up is not None:
        policy = policy.model_copy(update={"runners_up": args.runners_up})
        print(f"runners-up: {policy.runners_up}")
    if weights:
        print(f"score weights: {policy.weights.model_dump()}")
    return policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--queue", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=50, help="DAG steps the templated queue is made of")
    parser.add_argument("--sizes", default="10,100,1000", help="fleet sizes (clusters)")
    add_policy_options(parser)
    args = parser.parse_args()
    policy = policy_of(args)
    singles = max(args.runs, 21)
    print(f"medians of {args.runs} runs (single request: of {singles}); wall ms / CPU ms")
    print(
        "same view: decided again on the view of the run before; new read: a view built anew from "
        "reads that found the fleet unchanged; 10% changed: a tenth of the pools read differently; "
        "nothing kept: the engine's memory dropped first"
    )
    heads = [
        f"{what}{how}"
        for what in ("1 request", "steps", "random")
        for how in ("", " new read", " 10% changed", " nothing")
    ]
    print(
        f"{'clusters':>8} {'pools':>6} {'nodes':>6} {'view build':>13} "
        + " ".join(f"{h:>15} {'decisions/s':>11}" for h in heads)
        + f" {'admitted':>8}"
    )
    for clusters in (int(x) for x in args.sizes.split(",")):
        rng = random.Random(args.seed)
        profiles, observations = make_fleet(clusters, rng)
        build = median_seconds(lambda: build_view(profiles, observations, NOW), args.runs)  # noqa: B023
        observations, running, view, templated, random_queue = running_and_queues(
            profiles, observations, rng, args.queue, args.steps
        )
        one = [PlacementRequest(id="one", arrival=NOW, team="team-0", gpus=2)]
        figures = []
        for queue, runs in ((one, singles), (templated, args.runs), (random_queue, args.runs)):

            def run(v: GlobalView, queue: list[PlacementRequest] = queue, running=running) -> AdmissionResult:
                return decide(v, queue, running, policy, NOW)

            run(view)  # what the view teaches the engine, learnt before the "same view" runs
            same = median_seconds(lambda run=run, view=view: run(view), runs)
            new = median_per_view(run, new_reads(profiles, observations, runs))
            changed = median_per_view(run, changed_reads(profiles, observations, runs, rng))
            nothing = median_per_view(run, new_reads(profiles, observations, runs), forget=True)
            figures += [(same, len(queue)), (new, len(queue)), (changed, len(queue)), (nothing, len(queue))]
        admitted = len(decide(view, templated, running, policy, NOW).reservations)
        nodes = sum(len(p.capacity.nodes) for p in view.pools)

        def ms(t: tuple[float, float]) -> str:
            return f"{t[0] * 1e3:.1f}/{t[1] * 1e3:.1f}" if t[0] >= 0.01 else f"{t[0] * 1e3:.2f}/{t[1] * 1e3:.2f}"

        print(
            f"{clusters:>8} {len(view.pools):>6} {nodes:>6} {ms(build):>13} "
            + " ".join(f"{ms(t):>15} {n / t[0]:>11.0f}" for t, n in figures)
            + f" {admitted:>8}"
        )


if __name__ == "__main__":
    main()
