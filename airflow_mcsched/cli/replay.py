"""`mcsched replay ...`: replay an openb-format trace through the engine or a baseline, in simulated time."""

from __future__ import annotations

import argparse
import json

from airflow_mcsched.replay.compare import compare, policy_names
from airflow_mcsched.replay.fleet import load_fleet
from airflow_mcsched.replay.metrics import ReplaySummary
from airflow_mcsched.replay.openb import compress_arrivals, read_jobs

COLUMNS = (
    ("policy", "policy", "{}"),
    ("jobs", "jobs", "{}"),
    ("mean_wait", "mean wait s", "{:.0f}"),
    ("p50_wait", "p50 s", "{:.0f}"),
    ("p95_wait", "p95 s", "{:.0f}"),
    ("max_wait", "max s", "{:.0f}"),
    ("gpu_allocation", "GPU alloc", "{:.3f}"),
    ("total_cost", "cost", "{:.0f}"),
    ("unplaceable", "unplaceable", "{}"),
)


def table(summaries: list[ReplaySummary]) -> str:
    rows = [[fmt.format(getattr(s, key)) for key, _, fmt in COLUMNS] for s in summaries]
    heads = [head for _, head, _ in COLUMNS]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(heads, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    policies = policy_names(args.policy)
    fleet = load_fleet(args.fleet, args.nodes, args.scale)
    jobs, skipped = read_jobs(args.pods)
    if args.limit:
        jobs = jobs[: args.limit]
    jobs = compress_arrivals(jobs, args.load)
    summaries = compare(fleet, jobs, policies, seeds=args.seeds)
    if args.format == "json":
        data = {s.policy: s.as_dict() for s in summaries}
        print(json.dumps(data[policies[0]] if len(policies) == 1 else data, indent=2))
    else:
        print(
            f"{len(jobs)} jobs ({skipped} never ran in the trace), {sum(len(n) for n in fleet.nodes.values())} "
            f"nodes / {fleet.total_gpus} GPUs in {len(fleet.profiles)} clusters, load x{args.load:g}"
        )
        print(table(summaries))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="replay a GPU trace (openb format) through a placement policy")
    p.add_argument("--pods", required=True, help="pod list CSV (openb_pod_list_*.csv)")
    p.add_argument("--nodes", help="node list CSV (openb_node_list_gpu_node.csv); needed with a split CSV")
    p.add_argument("--fleet", required=True, help="fleet file (YAML) or split CSV (openb_fleet_split.csv)")
    p.add_argument("--scale", type=float, help="0.1: the split's 10%% subset (in_scale_0_1)")
    p.add_argument("--load", type=float, default=1.0, help="divide inter-arrival times by this")
    p.add_argument("--policy", default="mcsched", help="mcsched, a baseline, a comma list, or 'all'")
    p.add_argument("--seeds", type=int, default=1, help="runs averaged for randomised policies")
    p.add_argument("--limit", type=int, help="replay only the first N jobs")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)
