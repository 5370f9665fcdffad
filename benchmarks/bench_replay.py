"""Replay benchmark: the openb trace on the reference fleet through every policy, with the time each took.

    .venv/bin/python benchmarks/bench_replay.py [--scale 0.1] [--load 300] [--policy all] [--limit N]

Prints the replay's own figures (queueing delay, GPU allocation, cost, unplaceable) and the CPU
seconds each policy's replay took.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from airflow_mcsched.replay.compare import compare, policy_names
from airflow_mcsched.replay.fleet import fleet_from_split
from airflow_mcsched.replay.openb import compress_arrivals, read_jobs

TRACES = Path("/work/shared/traces")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--load", type=float, default=300)
    parser.add_argument("--policy", default="all")
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()
    fleet = fleet_from_split(
        args.traces / "openb_fleet_split.csv", args.traces / "openb_node_list_gpu_node.csv", args.scale
    )
    jobs, skipped = read_jobs(args.traces / "openb_pod_list_default.csv")
    jobs = compress_arrivals(jobs[: args.limit] if args.limit else jobs, args.load)
    print(f"{len(jobs)} jobs ({skipped} never ran), {fleet.total_gpus} GPUs, scale {args.scale}, load x{args.load:g}")
    heads = ("policy", "cpu s", "mean wait", "p95 wait", "max wait", "alloc", "cost", "unpl")
    widths = (12, 7, 10, 9, 9, 6, 7, 5)
    print(" ".join(h.rjust(w) for h, w in zip(heads, widths, strict=True)))
    for name in policy_names(args.policy):
        start = time.process_time()
        (seeded,) = compare(fleet, jobs, [name])
        s = seeded.median
        took = time.process_time() - start
        print(
            f"{name:>12} {took:>7.1f} {s.mean_wait:>10.0f} {s.p95_wait:>9.0f} {s.max_wait:>9.0f} "
            f"{s.gpu_allocation:>6.3f} {s.total_cost:>7.0f} {s.unplaceable:>5}",
            flush=True,
        )


if __name__ == "__main__":
    main()
