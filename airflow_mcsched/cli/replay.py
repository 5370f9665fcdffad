"""`mcsched replay ...`: replay an openb-format trace through the engine and the baselines, in simulated time.

Example (the reference fleet's 10 % subset, arrivals 300x faster, every policy, 5 seeds):

    mcsched replay --pods traces/openb_pod_list_default.csv --nodes traces/openb_node_list_gpu_node.csv \\
        --fleet traces/openb_fleet_split.csv --scale 0.1 --load 300 --policy all --seeds 5
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from airflow_mcsched.cli.table import render_table
from airflow_mcsched.replay.compare import compare, policy_names
from airflow_mcsched.replay.fleet import load_fleet
from airflow_mcsched.replay.metrics import SeededSummary
from airflow_mcsched.replay.openb import compress_arrivals, read_jobs
from airflow_mcsched.replay.run_store import RunStore
from airflow_mcsched.replay.variants import VARIANTS, variant

COLUMNS = (
    ("jobs", "jobs", "{}"),
    ("mean_wait", "mean wait s", "{:.0f}"),
    ("mean_wait_normal", "normal s", "{:.0f}"),
    ("mean_wait_low", "low s", "{:.0f}"),
    ("p95_wait", "p95 wait s", "{:.0f}"),
    ("max_wait", "max wait s", "{:.0f}"),
    ("max_wait_multi_gpu", "max wait multi-GPU s", "{:.0f}"),
    ("gpu_allocation", "GPU alloc", "{:.3f}"),
    ("total_cost", "cost $", "{:.0f}"),
    ("egress_cost", "egress $", "{:.0f}"),
    ("data_moved_gib", "data moved TiB", "{:.1f}"),
    ("unplaceable", "unplaceable", "{}"),
)


def table(summaries: list[SeededSummary]) -> str:
    """Medians over seeds; with several seeds, the spread (min-max) of the mean wait too."""
    seeded = any(s.seeds > 1 for s in summaries)
    heads = ["policy", *(head for _, head, _ in COLUMNS)] + (["mean wait min-max"] if seeded else [])
    rows = []
    for s in summaries:
        values = {**s.median.as_dict(), "data_moved_gib": s.median.data_moved_gib / 1024}
        row = [s.median.policy, *(fmt.format(values[key]) for key, _, fmt in COLUMNS)]
        if seeded:
            low, high = s.spread["mean_wait"]
            row.append(f"{low:.0f}-{high:.0f}")
        rows.append(row)
    return render_table(heads, rows)


def run(args: argparse.Namespace) -> int:
    policies = policy_names(args.policy)
    fleet = load_fleet(args.fleet, args.nodes, args.scale)
    jobs, skipped = read_jobs(args.pods)
    if args.limit:
        jobs = jobs[: args.limit]
    jobs = compress_arrivals(variant(args.variant, jobs, fleet), args.load)
    store = None
    if args.runs_dir:
        setting = {
            "pods": Path(args.pods).name,
            "nodes": Path(args.nodes).name if args.nodes else None,
            "fleet": Path(args.fleet).name,
            "scale": args.scale,
            "load": args.load,
            "variant": args.variant,
            "limit": args.limit,
            "jobs": len(jobs),
        }
        store = RunStore(args.runs_dir, setting, baseline_backfill=args.baseline_backfill)
    easy = args.baseline_backfill
    summaries = compare(fleet, jobs, policies, seeds=args.seeds, workers=args.jobs, store=store, baseline_backfill=easy)
    if args.format == "json":
        data = {s.median.policy: s.as_dict() for s in summaries}
        print(json.dumps(data[policies[0]] if len(policies) == 1 else data, indent=2))
        return 0
    print(
        f"{len(jobs)} jobs ({skipped} never ran in the trace), variant {args.variant}, "
        f"{sum(len(n) for n in fleet.nodes.values())} nodes / {fleet.total_gpus} GPUs in {len(fleet.profiles)} "
        f"clusters, load x{args.load:g}, median of {args.seeds} seed(s)"
    )
    print(table(summaries))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="replay a GPU trace (openb format) through placement policies")
    p.add_argument("--pods", required=True, help="pod list CSV (openb_pod_list_*.csv)")
    p.add_argument("--nodes", help="node list CSV (openb_node_list_gpu_node.csv); needed with a split CSV")
    p.add_argument("--fleet", required=True, help="fleet file (YAML) or split CSV (openb_fleet_split.csv)")
    p.add_argument("--scale", type=float, help="0.1: the split's 10%% subset (in_scale_0_1)")
    p.add_argument("--load", type=float, default=1.0, help="divide inter-arrival times by this")
    p.add_argument("--policy", default="mcsched", help="mcsched, a baseline, a comma list, or 'all'")
    p.add_argument("--seeds", type=int, default=1, help="runs with jittered arrivals (seed 0 = as in the trace)")
    p.add_argument("--variant", choices=VARIANTS, default="shipped", help="the trace, or a seeded derivation")
    p.add_argument("--limit", type=int, help="replay only the first N jobs")
    p.add_argument("--jobs", type=int, default=1, help="processes to spread the runs over (same figures)")
    p.add_argument(
        "--runs-dir",
        help="keep each finished (policy, seed) run here and reuse the ones already there: a long comparison resumes",
    )
    p.add_argument(
        "--baseline-backfill",
        action="store_true",
        help="the baselines run plain EASY backfill (a hold for the first blocked job), as batch schedulers do",
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)
