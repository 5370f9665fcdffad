"""A hash of every decision the engine makes over a sequence of cycles: equal before and after a change
that must not move a decision (a cache, a faster ranking), whatever it remembers between cycles.

    .venv/bin/python benchmarks/decision_hash.py            # the code imported
    cd /tmp && PYTHONPATH=/tmp/base python /work/main/benchmarks/decision_hash.py   # other code
    .venv/bin/python benchmarks/decision_hash.py --busy     # on a full fleet (engine_cycles.py --busy)
    .venv/bin/python benchmarks/decision_hash.py --governed # the governed live fleet (memory_soak.py --governed)

The fleets and queues of `bench_engine.py` (10 and 100 clusters, seed 1), both queues (templated DAG
steps and all-different requests), five policies (the defaults; `whole_nodes` off; weight overrides
for two teams; no runners-up; dollars at stake from 1 GPU-hour), each through ten cycles in one
process, memory kept between them: the
same view three times, two new reads of it, three reads with a tenth of the pools changed, the first
view again, and the first view three hours later (the per-cycle score reads the clock; holds for
large requests that waited an hour apply). It prints one hash per fleet, queue and policy, and one
over all; a decision is hashed by its `repr` (outcome, reason, summary, placement with every score
part and figure, runners-up, rejections, victims, reservation, expected start). With `--busy`
the cycles run on the fleet filled as `engine_cycles.py --busy` fills it, where most requests wait
and many preempt. Compare whole runs only: a changed read differs from every read before it in the
process (`bench_engine._reads_changed`), so a scenario's hash depends on the ones run before it.
With `--governed`, the cycles of the governed live fleet (`memory_soak.py --governed`: quotas,
kept GPUs, spread groups, failed and old reads...), whose inputs follow each cycle's decisions:
40 cycles at 20 clusters and 15 at 100 clusters with about 1,000 pending (minutes).
With `--mask-stale`, the words of a ClusterStale rejection are hashed as one mark, whichever code
worded them (session 39 named the read's time instead of its age): two codes that differ only
there hash alike.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
from datetime import timedelta

from bench_engine import NOW, changed_reads, filled, fleet_and_queues, new_reads

from airflow_mcsched.decision import Policy, decide, plan_cache
from airflow_mcsched.decision.policy import WeightOverride

POLICIES = {
    "defaults": Policy(),
    "whole_nodes off": Policy(weights={"whole_nodes": 0.0}),
    "two teams' overrides": Policy(
        overrides=[
            WeightOverride(team="team-1", weights={"price": 3.0, "fragmentation": 0.0}),
            WeightOverride(team="team-2", weights={"data": 0.0, "whole_nodes": 2.0}),
        ]
    ),
    "no runners-up": Policy(runners_up=0),
    # the benchmark's requests stay under the default 100 GPU-hours: staked from 1, most are
    "dollars at stake from 1": Policy(dollars_at_stake_gpu_hours=1),
}


STALE_WORDS = re.compile(
    r"capacity last read (\d+s ago, older than \d+s|at [\d: -]+ UTC, longer ago than the \d+s allowed)"
)
"""A ClusterStale rejection's words: before session 39 (the read's age) and since (its time)."""
_mask_stale = False


def _words(text: str) -> str:
    """`text` as hashed: with `--mask-stale`, every ClusterStale rejection's words made one mark."""
    return STALE_WORDS.sub("<stale read>", text) if _mask_stale else text


def cycle_hashes(clusters: int, queue_kind: str, policy: Policy, busy: bool = False) -> str:
    """The hash of ten cycles' decisions, on a fleet with nothing remembered before the first."""
    plan_cache.forget_all()
    rng = random.Random(1)
    profiles, observations, running, view, templated, random_queue = fleet_and_queues(clusters, rng)
    queue = templated if queue_kind == "steps" else random_queue
    if busy:  # filled by the default policy, whatever policy is hashed
        running = filled((clusters, queue_kind), view, queue, running)
    views = [
        (view, NOW),
        (view, NOW),
        (view, NOW),
        *((v, NOW) for v in new_reads(profiles, observations, 2)),
        *((v, NOW) for v in changed_reads(profiles, observations, 3, rng)),
        (view, NOW),
        (view, NOW + timedelta(hours=3)),
    ]
    digest = hashlib.sha256()
    for v, now in views:
        result = decide(v, queue, running, policy, now)
        for decision in result.decisions:
            digest.update(_words(repr(decision)).encode())
        digest.update(_words(repr((result.reservations, result.reclaimed, result.preemptions))).encode())
    return digest.hexdigest()[:16]


GOVERNED = ((20, 300, 60, 40), (100, 2000, 100, 15))
"""The governed fleets hashed: clusters, the first queue, new requests a cycle, cycles."""


def governed_hash(clusters: int, queue: int, arrivals: int, cycles: int) -> str:
    """The hash of the governed live fleet's cycles, each decided on what the ones before left
    (`memory_soak.soak`, with the memory only)."""
    import memory_soak  # it puts its repository first on the path: imported after the engine was

    fleet = memory_soak.live_fleet(clusters, 1, queue, arrivals, governed=True)
    policy = memory_soak.governed_policy(fleet.profiles)
    digest = hashlib.sha256()
    for figures in memory_soak.soak(fleet, cycles, policy, timedelta(seconds=120), check=False, results=True):
        digest.update(_words(repr(figures.result)).encode())
    return digest.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", action="store_true", help="on a full fleet")
    parser.add_argument("--governed", action="store_true", help="the governed live fleet's cycles")
    parser.add_argument("--mask-stale", action="store_true", help="hash a ClusterStale rejection's words as one mark")
    args = parser.parse_args()
    global _mask_stale
    _mask_stale = args.mask_stale
    busy = args.busy
    overall = hashlib.sha256()
    if args.governed:
        for clusters, queue, arrivals, cycles in GOVERNED:
            h = governed_hash(clusters, queue, arrivals, cycles)
            overall.update(h.encode())
            print(f"{clusters:>4} clusters  governed, {cycles} cycles  {h}", flush=True)
        print(f"all: {overall.hexdigest()[:16]}")
        return
    for clusters in (10, 100):
        for queue_kind in ("steps", "random"):
            for name, policy in POLICIES.items():
                h = cycle_hashes(clusters, queue_kind, policy, busy)
                overall.update(h.encode())
                print(f"{clusters:>4} clusters  {queue_kind:<6}  {name:<22} {h}", flush=True)
    print(f"all: {overall.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
