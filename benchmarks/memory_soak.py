"""Decisions made with the engine's memory against decisions made with none, cycle after cycle on a
fleet that moves as a live one does: the check that nothing the engine keeps changes a decision.

    .venv/bin/python benchmarks/memory_soak.py --clusters 100 --cycles 60
    .venv/bin/python benchmarks/memory_soak.py --clusters 20 --cycles 300 --seed 3
    .venv/bin/python benchmarks/memory_soak.py --governed --clusters 20 --cycles 200
    .venv/bin/python benchmarks/memory_soak.py --governed --queue 2000 --arrivals 100 --no-check --calls

The engine keeps plans, verdicts, rankings and where they start, explanations, capacity objects and
the running work's indexes from one cycle to the next (decision/plan_cache.py and what it holds),
and promises that no decision depends on any of it. The unit tests check that over a few cycles of
small fleets; this runs the benchmark's fleet (`bench_engine.py`) for as many cycles as asked, each
one's inputs made from the last one's decisions:

- the pods of granted work show in the capacity reads after a while (each cycle, 70 % of those not
  shown yet), and from then on the reads count what they use on their nodes;
- other tenants' use changes on a tenth of the pools each cycle (`--drift`);
- work ends at its expected end; leases are renewed, but 3 % in two minutes are left to lapse
  (the engine reclaims them); the victims of a preemption stop;
- the queue keeps what waits and gets new requests, half all-different, half new runs of the
  benchmark's 50 DAG steps;
- the clock moves on by `--step` seconds.

Each cycle is decided twice on the same inputs: with nothing remembered (the memory set aside, and
put back after), then with the memory. The two results are compared whole (outcomes, placements,
explanations and their scores, runners-up, victims, reclaimed leases); the first difference stops
the run (exit status 1) and names the request. One line per cycle says what it decided and the CPU
ms of both ways (`--calls`: and the function calls with the memory); the last lines, every reason
the decisions named.

`--governed` adds what governed_fleet.py describes: quotas and the quota taken back, GPUs kept for
some, spread groups, failure domains, cost ceilings, weight overrides, aging, pod counts that move
from read to read, and clusters whose read failed (`--failed-reads`), is old or that are cordoned.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import math
import pstats
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from airflow_mcsched.access.capacity import MILLI_PER_GPU, ClusterObservation, NodeObservation
from airflow_mcsched.access.profiles import ClusterProfile
from airflow_mcsched.decision import AdmissionResult, Outcome, PlacementRequest, Policy, Reservation, decide, plan_cache
from airflow_mcsched.view import NodeAllocation, build_view

# Run as a script, the repository's root makes `benchmarks` importable. Put on the path only after
# the engine was imported, so that `PYTHONPATH=/other/tree` measures that tree's engine.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_engine import NOW, TEAMS, changed_nodes, fleet_and_queues, make_queue
from benchmarks.governed_fleet import (
    FAILED,
    OLD,
    OLD_READ,
    SEED_OFFSET,
    cordoned_now,
    domains_of,
    governed_policy,
    governed_request,
    unsettled,
    with_kept_gpus,
    with_pod_counts,
)

SHOWN_PER_CYCLE = 0.7
"""The chance, each cycle, that a granted pod not shown yet shows in the reads."""
LAPSED = 0.03
"""The share of running leases left unrenewed in 120 s (a lease is renewed or not once per cycle)."""


@dataclass
class LiveFleet:
    """The fleet's inputs to the next cycle: reads, running work, queue and clock."""

    profiles: list[ClusterProfile]
    others: list[ClusterObservation]
    """Each cluster's read as other tenants' use alone leaves it: our shown pods are taken from it."""
    running: dict[str, Reservation]
    shown: set[str]
    queue: list[PlacementRequest]
    steps: list[PlacementRequest]
    """Runs of the benchmark's 50 DAG steps: new ones are copies of these."""
    rng: random.Random
    now: datetime = NOW
    cycle: int = 0
    new_per_cycle: int = 60
    drift: float = 0.1
    """The share of the pools where other tenants' use moves each cycle."""
    lapsed: set[str] = field(default_factory=set)
    governed: random.Random | None = None
    """With `--governed`, the generator of what governed_fleet.py adds (reads, requests); None without."""
    failed_reads: float = FAILED
    """Governed: the chance, per cluster and cycle, that its read failed (`--failed-reads`)."""
    old_reads: float = OLD
    """Governed: the chance, per cluster and cycle, that its read is old (`--old-reads`)."""
    stopped_syncs: int = 0
    """Governed: clusters, spread over the fleet, whose sync stopped before the first cycle: every
    read of theirs is the one made `OLD_READ` before it (`--stopped-syncs`)."""

    def profiles_now(self) -> list[ClusterProfile]:
        """The fleet's profiles this cycle: governed, with the cluster cordoned now."""
        return self.profiles if self.governed is None else cordoned_now(self.profiles, self.cycle)

    def reads(self) -> list[ClusterObservation]:
        """The capacity reads now: other tenants' use, and our pods that show, on their nodes."""
        taken: dict[str, list[NodeAllocation]] = {}
        shown_by_cluster: dict[str, set[str]] = {}
        for r in self.running.values():
            if r.id in self.shown:
                shown_by_cluster.setdefault(r.cluster, set()).add(r.id)
                for a in r.pods:
                    taken.setdefault(a.node, []).append(a)
        out = []
        for o in self.others:
            nodes = tuple(_with_pods(n, taken[n.name]) if n.name in taken else n for n in o.nodes)
            seen = frozenset(shown_by_cluster.get(o.cluster, ()))
            out.append(dataclasses.replace(o, nodes=nodes, observed_at=self.now, reservation_ids_seen=seen))
        if self.governed is None:
            return out
        out = unsettled(
            with_pod_counts(out, self.running.values(), self.shown),
            self.governed,
            self.now,
            self.failed_reads,
            self.old_reads,
        )
        if self.stopped_syncs:
            every = max(1, len(out) // self.stopped_syncs)
            stopped = set(range(0, every * self.stopped_syncs, every))
            out = [dataclasses.replace(o, observed_at=NOW - OLD_READ) if i in stopped else o for i, o in enumerate(out)]
        return out

    def after(self, result: AdmissionResult, step: timedelta, lease: timedelta) -> None:
        """Move on past a cycle's result: its grants run, its victims and lapsed leases go, the
        clock moves on, work that ended goes, pods show, other tenants' use moves, requests arrive."""
        rng = self.rng
        stopped = {v.reservation_id for v in result.preemptions} | {r.reservation_id for r in result.reclaimed}
        for r in result.reservations:
            self.running[r.id] = r
        admitted = {d.request_id for d in result.decisions if d.outcome is Outcome.ADMITTED}
        self.queue = [q for q in self.queue if q.id not in admitted]
        self.now += step
        self.cycle += 1
        lapse = 1 - (1 - LAPSED) ** (step.total_seconds() / 120)
        for rid, r in list(self.running.items()):
            if rid in stopped or r.expected_end <= self.now:
                del self.running[rid]
                self.shown.discard(rid)
            elif rid not in self.lapsed:
                if rng.random() < lapse:
                    self.lapsed.add(rid)
                else:
                    self.running[rid] = dataclasses.replace(r, expires_at=self.now + lease)
        self.shown.update(rid for rid in self.running if rid not in self.shown and rng.random() < SHOWN_PER_CYCLE)
        self.others = _drifted(self.others, rng, self.drift)
        self.queue += self._arrivals()

    def _arrivals(self) -> list[PlacementRequest]:
        rng, n = self.rng, self.new_per_cycle
        fresh = make_queue(n // 2, rng)
        steps = [rng.choice(self.steps) for _ in range(n - n // 2)]
        arrivals = [
            r.model_copy(
                update={
                    "id": f"c{self.cycle}-{i}",
                    "arrival": self.now - timedelta(seconds=rng.randrange(60)),
                    "team": rng.choice(TEAMS),
                }
            )
            for i, r in enumerate([*fresh, *steps])
        ]
        if self.governed is None:
            return arrivals
        domains = domains_of(self.profiles)
        return [governed_request(r, self.governed, self.cycle, domains) for r in arrivals]


def _with_pods(node: NodeObservation, pods: Sequence[NodeAllocation]) -> NodeObservation:
    """The node as a read shows it with these pods of ours on it (what it cannot hold is not shown)."""
    free = sorted(node.gpu_milli_free, reverse=True)
    for a in pods:
        if a.gpus:
            whole = [i for i, m in enumerate(free) if m >= MILLI_PER_GPU][: a.gpus]
            for i in whole:
                free[i] = 0
        elif a.gpu_milli:
            fits = [i for i, m in enumerate(free) if m >= a.gpu_milli]
            if fits:
                i = min(fits, key=free.__getitem__)  # the tightest share, as the node chooser picks
                free[i] -= a.gpu_milli
        free.sort(reverse=True)
    return dataclasses.replace(
        node,
        gpu_milli_free=tuple(free),
        cpu_milli_requested=min(node.cpu_milli_allocatable, node.cpu_milli_requested + sum(a.cpu_milli for a in pods)),
        memory_mib_requested=min(
            node.memory_mib_allocatable, node.memory_mib_requested + sum(a.memory_mib for a in pods)
        ),
    )


def _drifted(reads: list[ClusterObservation], rng: random.Random, share: float) -> list[ClusterObservation]:
    """Other tenants' use moved on one node of each of a `share` of the pools."""

    def moved(node: NodeObservation) -> NodeObservation:
        used = rng.randint(0, node.gpus)
        return dataclasses.replace(
            node,
            gpu_milli_free=(MILLI_PER_GPU,) * (node.gpus - used) + (0,) * used,
            cpu_milli_requested=rng.randint(0, 32) * 1000,
        )

    return changed_nodes(reads, rng, moved, share)


def live_fleet(
    clusters: int,
    seed: int,
    queue: int = 300,
    new_per_cycle: int = 60,
    drift: float = 0.1,
    governed: bool = False,
) -> LiveFleet:
    """The benchmark's fleet (`bench_engine.fleet_and_queues`) as the soak's first cycle sees it:
    its running work, the pods it reads as shown, and a queue of `queue` requests. `governed`: with
    what governed_fleet.py adds (decide it with `governed_policy(fleet.profiles)`)."""
    rng = random.Random(seed)
    profiles, observations, running, _, steps, different = fleet_and_queues(clusters, rng)
    if queue > len(steps) + len(different):
        raise ValueError(f"queue: at most {len(steps) + len(different)} requests (the benchmark's two queues)")
    shown = {rid for o in observations for rid in o.reservation_ids_seen}
    # the benchmark's reads count its running work already: theirs are other tenants' use here
    others = [dataclasses.replace(o, reservation_ids_seen=frozenset()) for o in observations]
    # ids of their own: the benchmark's two queues number their requests alike
    first = [
        *(r.model_copy(update={"id": f"any-{r.id}"}) for r in different[: queue // 2]),
        *(r.model_copy(update={"id": f"steps-{r.id}"}) for r in steps[: queue - queue // 2]),
    ]
    drawn = random.Random(seed + SEED_OFFSET) if governed else None
    if drawn is not None:
        profiles = with_kept_gpus(profiles)
        domains = domains_of(profiles)
        first = [governed_request(r, drawn, 0, domains) for r in first]
    return LiveFleet(
        profiles=profiles,
        others=others,
        running={r.id: r for r in running},
        shown=shown,
        queue=first,
        steps=steps,
        rng=rng,
        new_per_cycle=new_per_cycle,
        drift=drift,
        governed=drawn,
    )


@dataclass(frozen=True)
class CycleFigures:
    cycle: int
    queue: int
    running: int
    admitted: int
    preempting: int
    waiting: int
    victims: int
    reclaimed: int
    fresh_ms: float
    """NaN when the cycle was not decided afresh (`check=False`)."""
    kept_ms: float
    calls: int | None = None
    """Function calls of the cycle decided with the memory, under cProfile (`--calls`): a figure
    that does not move with the machine."""
    reasons: Counter[str] = field(default_factory=Counter, compare=False)
    """What the cycle's decisions name: each reason a waiting request was rejected for anywhere
    (once per request), and each victim's: which of the engine's paths the cycle went through."""
    result: AdmissionResult | None = field(default=None, compare=False, repr=False)
    """The cycle's result decided with the memory, with `soak(..., results=True)` (decision_hash.py
    hashes it); None otherwise, so a long soak keeps no cycle's decisions."""

    def line(self) -> str:
        fresh = "" if math.isnan(self.fresh_ms) else f"with nothing kept {self.fresh_ms:7.1f}, "
        return (
            f"cycle {self.cycle:4d}: queue {self.queue:5d}, running {self.running:5d} -> admitted {self.admitted:4d}, "
            f"preempting {self.preempting:3d}, waiting {self.waiting:4d}, victims {self.victims:3d}, "
            f"reclaimed {self.reclaimed:3d}; CPU ms {fresh}kept {self.kept_ms:6.1f}"
            + ("" if self.calls is None else f"; calls {self.calls:,}")
        )


class MemoryChangedADecision(AssertionError):
    """A decision made with the engine's memory differs from the one made with none."""


def with_nothing_remembered(*args, **kwargs) -> AdmissionResult:
    """`decide(...)` with the engine's memory set aside, and put back after: a cycle decided afresh
    that leaves what the kept cycles remember as it was."""
    with plan_cache.set_aside():
        return decide(*args, **kwargs)


def first_difference(fresh: AdmissionResult, kept: AdmissionResult) -> str | None:
    """Where two results of one cycle differ, said for a person; None when they are equal."""
    if fresh == kept:
        return None
    by_id = {d.request_id: d for d in kept.decisions}
    for d in fresh.decisions:
        other = by_id.get(d.request_id)
        if other != d:
            return f"request {d.request_id}:\n  with nothing kept: {d}\n  with the memory:   {other}"
    for name in ("reservations", "reclaimed", "preemptions"):
        if getattr(fresh, name) != getattr(kept, name):
            fresh_part, kept_part = getattr(fresh, name), getattr(kept, name)
            return f"the results' {name} differ:\n  with nothing kept: {fresh_part}\n  with the memory:   {kept_part}"
    return "the results differ in the order of their decisions"


def soak(
    fleet: LiveFleet,
    cycles: int,
    policy: Policy,
    step: timedelta,
    *,
    check: bool = True,
    calls: bool = False,
    results: bool = False,
) -> Iterator[CycleFigures]:
    """Decide `cycles` cycles of `fleet` both ways, moving it on after each; raise
    `MemoryChangedADecision` at the first difference. Without `check`, with the memory only: the
    CPU time of a live fleet's cycles, undisturbed by the cycles decided afresh. With `calls`, the
    cycles with the memory run under cProfile (their CPU time with it), which counts their calls.
    With `results`, each cycle's figures carry its result."""
    plan_cache.forget_all()
    for _ in range(cycles):
        view = build_view(fleet.profiles_now(), fleet.reads(), fleet.now)
        running = list(fleet.running.values())
        fresh_ms = float("nan")
        if check:
            started = time.process_time()
            fresh = with_nothing_remembered(view, fleet.queue, running, policy, fleet.now)
            fresh_ms = (time.process_time() - started) * 1e3
        profile = cProfile.Profile() if calls else None
        started = time.process_time()
        if profile is None:
            kept = decide(view, fleet.queue, running, policy, fleet.now)
        else:
            kept = profile.runcall(decide, view, fleet.queue, running, policy, fleet.now)
        kept_ms = (time.process_time() - started) * 1e3
        difference = first_difference(fresh, kept) if check else None
        if difference is not None:
            raise MemoryChangedADecision(f"cycle {fleet.cycle}, at {fleet.now.isoformat()}: {difference}")
        outcomes = [d.outcome for d in kept.decisions]
        yield CycleFigures(
            cycle=fleet.cycle,
            queue=len(fleet.queue),
            running=len(running),
            admitted=outcomes.count(Outcome.ADMITTED),
            preempting=outcomes.count(Outcome.PREEMPTING),
            waiting=outcomes.count(Outcome.WAITING),
            victims=len(kept.preemptions),
            reclaimed=len(kept.reclaimed),
            reasons=_reasons_named(kept),
            fresh_ms=fresh_ms,
            kept_ms=kept_ms,
            calls=None if profile is None else sum(s[1] for s in pstats.Stats(profile).stats.values()),  # type: ignore[attr-defined]
            result=kept if results else None,
        )
        fleet.after(kept, step, policy.lease)


def _reasons_named(result: AdmissionResult) -> Counter[str]:
    named: Counter[str] = Counter()
    for d in result.decisions:
        named.update({r.reason.value for r in d.rejections})
    named.update(f"victim: {v.reason.value}" for v in result.preemptions)
    return named


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--cycles", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--queue", type=int, default=300, help="requests in the first cycle's queue")
    parser.add_argument("--arrivals", type=int, default=60, help="new requests each cycle")
    parser.add_argument("--step", type=float, default=120.0, help="seconds from one cycle to the next")
    parser.add_argument("--drift", type=float, default=0.1, help="share of the pools other tenants' use moves in")
    parser.add_argument(
        "--no-check", action="store_true", help="decide with the memory only: the CPU ms of a live fleet's cycles"
    )
    parser.add_argument(
        "--governed",
        action="store_true",
        help="quotas, kept GPUs, spread groups, failure domains, cost ceilings, overrides, aging, failed, "
        "old and cordoned clusters (benchmarks/governed_fleet.py)",
    )
    parser.add_argument(
        "--failed-reads",
        type=float,
        default=FAILED,
        help="with --governed: the chance, per cluster and cycle, that its read failed",
    )
    parser.add_argument(
        "--old-reads",
        type=float,
        default=OLD,
        help="with --governed: the chance, per cluster and cycle, that its read is old (drawn afresh each cycle)",
    )
    parser.add_argument(
        "--stopped-syncs",
        type=int,
        default=0,
        help="with --governed: clusters whose sync stopped before the first cycle (their reads stay old)",
    )
    parser.add_argument("--calls", action="store_true", help="count each cycle's function calls (cProfile)")
    args = parser.parse_args()
    print(f"engine: {Path(sys.modules['airflow_mcsched'].__file__ or '').parent}", flush=True)
    fleet = live_fleet(args.clusters, args.seed, args.queue, args.arrivals, args.drift, args.governed)
    fleet.failed_reads, fleet.old_reads, fleet.stopped_syncs = args.failed_reads, args.old_reads, args.stopped_syncs
    policy = governed_policy(fleet.profiles) if args.governed else Policy()
    seen: list[CycleFigures] = []
    try:
        step = timedelta(seconds=args.step)
        for figures in soak(fleet, args.cycles, policy, step, check=not args.no_check, calls=args.calls):
            print(figures.line(), flush=True)
            seen.append(figures)
    except MemoryChangedADecision as e:
        print(f"DIFFERENT: {e}")
        sys.exit(1)
    total = {name: sum(getattr(f, name) for f in seen) for name in ("queue", "admitted", "preempting", "victims")}
    reclaimed = sum(f.reclaimed for f in seen)
    what = f"{total['queue']:,} decisions ({total['admitted']:,} admitted, {total['preempting']:,} preempting, "
    what += f"{total['victims']:,} victims), {reclaimed:,} leases reclaimed"
    if args.no_check:
        print(f"{args.cycles} cycles on {args.clusters} clusters (seed {args.seed}): {what}, nothing checked")
    else:
        print(f"{args.cycles} cycles on {args.clusters} clusters (seed {args.seed}): {what}, all equal both ways")
    named = sum((f.reasons for f in seen), Counter())
    print("reasons named (requests rejected for each anywhere, victims):")
    print("  " + ", ".join(f"{reason} {count:,}" for reason, count in sorted(named.items())))
    later = seen[len(seen) // 2 :]
    print(
        f"the second half's cycles: queue {statistics.median(f.queue for f in later):.0f} (median), "
        f"CPU ms with the memory: median {statistics.median(f.kept_ms for f in later):.1f}, "
        f"max {max(f.kept_ms for f in later):.1f}"
    )


if __name__ == "__main__":
    main()
