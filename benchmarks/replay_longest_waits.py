"""Why did the longest-waiting multi-GPU pods of a replay wait? One seed of the engine, traced.

    .venv/bin/python -m benchmarks.replay_longest_waits --variant shipped --load 200 --seed 4 [--top 3] \\
        [name=value ...]

For each of the `--top` multi-GPU pods that waited longest it prints what the pod asks (GPUs, CPU,
memory, GPU types), the pools with a node that could ever hold it (and how many such nodes), and
the long jobs (over `--long-hours`) that held those nodes while it waited, each with the number of
pools it could have used itself. A pod that fits few nodes and finds them held for days by jobs
that fit many more is starved by where other work was put, not by how its own hold was kept.
`name=value` changes the engine's replay policy as in `replay_policy_experiment.py`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from airflow_mcsched.replay.compare import jittered
from airflow_mcsched.replay.fleet import load_fleet
from airflow_mcsched.replay.fleet_state import FleetState
from airflow_mcsched.replay.openb import TraceJob, compress_arrivals, read_jobs
from airflow_mcsched.replay.placer import accepts
from airflow_mcsched.replay.policies import Mcsched
from airflow_mcsched.replay.simulator import JobRun, ReplayRun, replay
from airflow_mcsched.replay.variants import VARIANTS, variant
from airflow_mcsched.view.snapshot import PoolKey, PoolView
from benchmarks.replay_policy_experiment import TRACES, changed_policy


def pools_that_fit(pools: Sequence[PoolView], job: TraceJob) -> dict[PoolKey, int]:
    """Pool -> how many of its nodes could hold the pod when empty (GPU type and sharing as every
    policy judges them, then GPUs, CPU and memory per node)."""
    fit = {}
    for p in pools:
        if not accepts(p, job, job.demand):
            continue
        nodes = sum(
            1
            for n in p.capacity.nodes
            if n.gpus >= job.gpus
            and n.cpu_milli_allocatable >= job.cpu_milli
            and n.memory_mib_allocatable >= job.memory_mib
        )
        if nodes:
            fit[p.key] = nodes
    return fit


def longest_multi_gpu_waits(result: ReplayRun, top: int) -> list[JobRun]:
    return sorted((r for r in result.runs if r.job.gpus >= 2), key=lambda r: -r.wait)[:top]


def holders(result: ReplayRun, waited: JobRun, fits: dict[PoolKey, int], long_seconds: float) -> list[JobRun]:
    """Long jobs that held a pool the waiting pod fits while it waited, started before it did."""
    return [
        r
        for r in result.runs
        if (r.cluster, r.pool) in fits
        and r is not waited
        and r.start < waited.start
        and r.end > waited.job.arrival
        and r.end - r.start >= long_seconds
    ]


def report(result: ReplayRun, pools: Sequence[PoolView], top: int, long_seconds: float) -> list[str]:
    lines = []
    for run in longest_multi_gpu_waits(result, top):
        j = run.job
        fits = pools_that_fit(pools, j)
        lines.append(
            f"{j.name}: {j.gpus} GPUs, {j.cpu_milli / 1000:g} CPU, {j.memory_mib / 1024:.0f} GiB, "
            f"types {list(j.gpu_types) or 'any'}, {j.qos}; waited {run.wait:,.0f} s, ran on {run.cluster}/{run.pool}; "
            f"fits {sum(fits.values())} nodes in {len(fits)} pools: "
            + ", ".join(f"{c}/{p} ({n})" for (c, p), n in fits.items())
        )
        for h in sorted(holders(result, run, fits, long_seconds), key=lambda r: r.start):
            lines.append(
                f"    held by {h.job.name} ({h.job.gpus} GPUs, {h.job.cpu_milli / 1000:g} CPU, "
                f"{h.job.memory_mib / 1024:.0f} GiB) on {h.cluster}/{h.pool} from {h.start:,.0f} to {h.end:,.0f} s; "
                f"it fits {len(pools_that_fit(pools, h.job))} pools"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, default="shipped")
    parser.add_argument("--load", type=float, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--top", type=int, default=3)
    parser.add_argument("--long-hours", type=float, default=6.0, help="show holders that ran at least this long")
    parser.add_argument("--traces", default=TRACES)
    parser.add_argument("settings", nargs="*", help="name=value or w.<score>=value")
    args = parser.parse_args()
    t = args.traces
    fleet = load_fleet(f"{t}/openb_fleet_split.csv", f"{t}/openb_node_list_gpu_node.csv", 0.1)
    jobs = compress_arrivals(variant(args.variant, read_jobs(f"{t}/openb_pod_list_default.csv")[0], fleet), args.load)
    result = replay(fleet, jittered(jobs, args.seed), Mcsched(args.seed, changed_policy(args.settings)))
    print("\n".join(report(result, FleetState(fleet).pools, args.top, args.long_hours * 3600)))


if __name__ == "__main__":
    main()
