"""Cycle after cycle on one fleet: CPU ms and function calls of each admission cycle, in order.

    .venv/bin/python benchmarks/engine_cycles.py --queue random --reads same,same,same,new,new
    .venv/bin/python benchmarks/engine_cycles.py --queue random --reads new,new,new,new,new
    .venv/bin/python benchmarks/engine_cycles.py --queue random --reads changed,changed,changed,changed,changed,changed
    .venv/bin/python benchmarks/engine_cycles.py --queue random --reads drift,drift,drift,drift,drift,drift,drift,drift
    .venv/bin/python benchmarks/engine_cycles.py --queue random --reads 'drift*60' --passes cpu
    .venv/bin/python benchmarks/engine_cycles.py --queue steps --reads 'newqueue*20' --passes cpu
    .venv/bin/python benchmarks/engine_cycles.py --queue steps --reads same,same,same,new --busy
    .venv/bin/python benchmarks/engine_cycles.py --queue random --weight whole_nodes=0 --runners-up 0

The fleet and queues of `bench_engine.py` (100 clusters, seed 1). One cycle on the first view
first, untimed; then one cycle per entry of `--reads`: `same` decides again on that view, `new` on
a view built anew from the same reads, `changed` on one where a tenth of the pools read differently
from the first reads, `drift` on one where a tenth read differently from the view of the `drift`
before (the fleet drifts: no pool reads again as it did, so what the engine kept of the first reads
ages; `changed` returns each pool to its first read in the next view), `later` on the same view 5 s
later than the cycle before (the service's admission interval: a per-cycle score's values may move
with the clock), `newqueue` on a new read with a queue of new requests, the one the service meets
next: for `--queue steps` new runs of the same DAG steps (new ids, arrivals and teams, so the steps'
plans are kept), for `--queue random` 1,000 new all-different requests (whose plans are all new).
The other ways decide the same queue again, which is what the service does with the requests that
wait on a full fleet; on a fleet with room it admits most of a queue once.
`bench_engine.py` gives medians per way of reading; this shows how what the engine keeps ages from
one cycle to the next. Each CPU figure is followed by the part of it that the cyclic garbage
collector took (`gc`), as `gc.callbacks` report it. Calls are counted under cProfile in a second
pass over the same views (the figures of one cycle, not its time); memory in a third, under
tracemalloc: what the engine keeps after each cycle (its result dropped), the untimed first cycle
included (`first`).

`NAME*N` in `--reads` stands for N cycles of one way of reading; with 20 cycles or more, a last
line gives each way's median CPU ms over all its cycles and over the second half of them: on
drifting reads a start kept from an early cycle goes on ageing for dozens of cycles, so a short run
understates what a live fleet costs (`--passes cpu` skips the slower passes).

`--holds`: each CPU figure also gives the part of it spent in the backfill heads' replay of running
work (`backfill.hold_for_head`, timed around each call), which a full fleet's cycle calls for each
head it holds room for.

`--weight SCORE=W` and `--runners-up N` measure a policy other than the default (as in
`bench_engine.py`): what the per-cycle score, or the runners-up explained, cost a cycle.

`--busy`: the cycles of a full fleet. The benchmark's queue on its half-free fleet is a cycle that
admits about 900 requests at once (each with its explanation, runners-up and reservation). With
`--busy`, batches of 1,000 requests like the queue's are decided first, untimed, each batch's
grants kept as running work (and the work it preempted dropped), until a batch admits fewer than
100 (about 25 batches at 100 clusters: minutes); the measured cycles then decide the queue on
that full fleet, where most of it waits and the higher priorities look for work to stop: the
steady state of a long queue, decided again every admission interval. `--busy-file PATH` keeps that
running work in PATH (pickled): read from it when it is there, else made and written to it, so runs
that alternate two versions of the engine on one full fleet skip the minutes of filling.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import itertools
import pstats
import random
import statistics
import time
import tracemalloc
from collections.abc import Iterator
from datetime import timedelta
from functools import partial

from bench_engine import (
    NOW,
    TEAMS,
    add_policy_options,
    changed_reads,
    changed_views,
    filled_at,
    fleet_and_queues,
    make_queue,
    new_reads,
    policy_of,
)

from airflow_mcsched.decision import Policy, admission, decide, plan_cache

LATER = timedelta(seconds=5)


def cycles(
    queue_kind: str,
    reads: list[str],
    clusters: int,
    figure: str,
    busy: bool = False,
    policy: Policy | None = None,
    busy_file: str | None = None,
) -> list[str]:
    """The figure of each cycle: CPU ms, function calls under cProfile, or MB kept (tracemalloc)."""
    plan_cache.forget_all()
    gc.collect()
    rng = random.Random(1)
    profiles, observations, running, view, templated, random_queue = fleet_and_queues(clusters, rng)
    queue = templated if queue_kind == "steps" else random_queue
    if busy:  # the three passes decide on the same full fleet
        running = filled_at((clusters, queue_kind), view, queue, running, busy_file)
        gc.collect()
    views = {
        "same": lambda: view,
        "later": lambda: view,
        "new": lambda: new_reads(profiles, observations, 1)[0],
        "changed": lambda: changed_reads(profiles, observations, 1, rng)[0],
        # made one at a time as the cycles ask (under tracemalloc in the memory pass, like the others)
        "drift": partial(next, changed_views(profiles, observations, rng, drift=True)),
        "newqueue": lambda: new_reads(profiles, observations, 1)[0],
    }
    queues = new_queues(queue_kind, queue, random.Random(2))
    policy = policy or Policy()
    figures = []
    if figure == "memory":
        tracemalloc.start()
    decide(view, queue, running, policy, NOW)
    if figure == "memory":
        figures.append(_kept_mb())
    now = NOW
    for how in reads:
        v = views[how]()
        if how == "newqueue":
            queue = next(queues)
        if how == "later":  # the clock moves on by an admission interval (the service's default, 5 s)
            now += LATER
        if figure == "calls":
            profile = cProfile.Profile()
            profile.runcall(decide, v, queue, running, policy, now)
            figures.append(f"{sum(s[1] for s in pstats.Stats(profile).stats.values()):,}")  # type: ignore[attr-defined]
        elif figure == "memory":
            decide(v, queue, running, policy, now)
            del v
            figures.append(_kept_mb())
        else:
            watch = _CollectorWatch()
            _HOLDS_MS[0] = 0.0
            start = time.process_time()
            decide(v, queue, running, policy, now)
            holds = f" holds {_HOLDS_MS[0]:.0f}" if admission.hold_for_head is _timed_holds else ""
            figures.append(f"{(time.process_time() - start) * 1e3:.0f} (gc {watch.stop():.0f}{holds})")
    tracemalloc.stop()
    return figures


def new_queues(queue_kind: str, queue: list, rng: random.Random) -> Iterator[list]:
    """The queues a service meets next, one per `newqueue` cycle: new runs of the same DAG steps
    (the steps' requests with new ids, arrivals and teams), or new all-different requests."""
    for n in itertools.count(1):
        if queue_kind == "steps":
            yield [
                r.model_copy(
                    update={
                        "id": f"run{n}-{i:05d}",
                        "arrival": NOW - timedelta(seconds=rng.randrange(3600)),
                        "team": rng.choice(TEAMS),
                    }
                )
                for i, r in enumerate(queue)
            ]
        else:
            yield [r.model_copy(update={"id": f"new{n}-{r.id}"}) for r in make_queue(len(queue), rng)]


class _CollectorWatch:
    """CPU ms the cyclic garbage collector spent from now until `stop` (a cycle's own passes)."""

    def __init__(self) -> None:
        self.ms = 0.0
        self._started = 0.0
        gc.callbacks.append(self._phase)

    def _phase(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.ms += (time.process_time() - self._started) * 1e3

    def stop(self) -> float:
        gc.callbacks.remove(self._phase)
        return self.ms


_HOLDS_MS = [0.0]
_untimed_holds = admission.hold_for_head


def _timed_holds(*args, **kwargs):
    """`hold_for_head`, its CPU ms added to `_HOLDS_MS` (`--holds`)."""
    start = time.process_time()
    try:
        return _untimed_holds(*args, **kwargs)
    finally:
        _HOLDS_MS[0] += (time.process_time() - start) * 1e3


def _kept_mb() -> str:
    gc.collect()
    return f"{tracemalloc.get_traced_memory()[0] / 1e6:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queue", choices=["steps", "random"], default="random")
    parser.add_argument(
        "--reads", default="same,same,same,new,new", help="ways of reading, in order; NAME*N for N cycles of one"
    )
    parser.add_argument(
        "--passes", default="cpu,calls,memory", help="which of the passes cpu, calls, memory to run (all three)"
    )
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--busy", action="store_true", help="on a full fleet (see above)")
    parser.add_argument("--busy-file", default=None, help="with --busy: the full fleet's work, pickled (see above)")
    parser.add_argument("--holds", action="store_true", help="the CPU ms of the backfill heads' replay too")
    add_policy_options(parser)
    args = parser.parse_args()
    if args.holds:
        admission.hold_for_head = _timed_holds
    reads = _expanded(args.reads)
    policy = policy_of(args)
    passes = args.passes.split(",")
    for figure, label in (("cpu", "CPU ms"), ("calls", "calls"), ("memory", "MB kept")):
        if figure not in passes:
            continue
        figures = cycles(args.queue, reads, args.clusters, figure, args.busy, policy, args.busy_file)
        names = ["first", *reads] if figure == "memory" else reads
        print(f"{label}: " + " ".join(f"{h}={f}" for h, f in zip(names, figures, strict=True)))
        if figure == "cpu" and len(reads) >= 20:
            print("CPU ms " + _long_run(reads, [float(f.split()[0]) for f in figures]))


def _expanded(reads: str) -> list[str]:
    """`same,drift*3` -> ['same', 'drift', 'drift', 'drift']."""
    out = []
    for part in reads.split(","):
        name, _, times = part.partition("*")
        out += [name] * (int(times) if times else 1)
    return out


def _long_run(reads: list[str], ms: list[float]) -> str:
    """Per way of reading, over many cycles: the median of all, and of the second half (what the
    engine keeps has aged by then), with the range of the second half."""
    parts = []
    for how in dict.fromkeys(reads):
        mine = [m for h, m in zip(reads, ms, strict=True) if h == how]
        late = mine[len(mine) // 2 :]
        parts.append(
            f"{how}: median {statistics.median(mine):.0f} over {len(mine)} cycles, "
            f"{statistics.median(late):.0f} over the last {len(late)} ({min(late):.0f}-{max(late):.0f})"
        )
    return "; ".join(parts)


if __name__ == "__main__":
    main()
