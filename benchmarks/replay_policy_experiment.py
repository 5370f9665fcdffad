"""Replay the engine with its replay policy changed, one seed: what a policy setting does to the figures.

    .venv/bin/python benchmarks/replay_policy_experiment.py --variant multi-gpu --load 100 --seed 0 \\
        backfill_heads=1 w.whole_nodes=0

Each `name=value` sets a field of the engine's replay policy (`REPLAY_POLICY` in
`airflow_mcsched/replay/policies.py`); `w.<score>=value` sets a score weight. Prints the engine's
mean wait (all, `normal`, `low`), p95 wait, multi-GPU max wait and cost, as `mcsched replay` would
for `--policy mcsched --seeds 1` with that seed. For trying settings before changing the defaults:
the tables in docs/benchmarks.md are made with the shipped policy by `mcsched replay`.

`--dollars relative` tries another way of weighing the dollar scores (an experiment of session
12, not in the engine): each pool's extra dollars are divided by the cheapest pool's dollars
(the sum of each dollar column's minimum) instead of by the largest extra cost among the eligible
pools, so a pool that costs 30 % more than the cheapest loses 0.3 of the weight, whatever the
dearest eligible pool costs.

`--stake-cap N` and `--stake-scores a,b` (session 13) change, in this process only, what the
policy field `dollars_at_stake_gpu_hours` does: the highest stake level (`MAX_STAKE_LEVEL`, 7) and
the scores it multiplies (`Plugins.dollar_scores`: those `in_dollars`, price and data).
`--longest N` also prints the N jobs that waited longest.
"""

from __future__ import annotations

import argparse
import json

from airflow_mcsched.decision import admission, candidate_plan
from airflow_mcsched.decision import policy as policy_module
from airflow_mcsched.replay import policies
from airflow_mcsched.replay.fleet import load_fleet
from airflow_mcsched.replay.metrics import summarise
from airflow_mcsched.replay.openb import compress_arrivals, read_jobs
from airflow_mcsched.replay.simulator import replay
from airflow_mcsched.replay.variants import VARIANTS, jittered, variant

TRACES = "/work/shared/traces"


def changed_policy(settings: list[str]):
    """The replay policy with `name=value` fields and `w.<score>=value` weights changed (validated)."""
    fields: dict[str, object] = {}
    weights: dict[str, float] = {}
    for item in settings:
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"{item!r}: expected name=value (a policy field, or w.<score> for a weight)")
        if name.startswith("w."):
            weights[name[2:]] = float(value)
        else:
            fields[name] = json.loads(value)
    base = policies.REPLAY_POLICY.model_dump()
    base["weights"] = {**base["weights"], **weights}
    return type(policies.REPLAY_POLICY).model_validate({**base, **fields})


class _AsGiven:
    """Stands for a dollar score in the engine's ranking, so that its column, already turned into
    [0, 1] here, is weighted as it is."""

    in_dollars = False


_rank_by_spread = candidate_plan._rank_statically


def _rank_relative(passed, static, columns):
    """`candidate_plan._rank_statically` with dollar columns taken relative to the cheapest pool's
    dollars (see the module's docstring): they are turned into [0, 1] here, and the engine's own
    ranking weighs, sums and sorts them as given."""
    dollar_columns = [i for i, (s, _) in enumerate(static) if s.in_dollars]
    if dollar_columns and passed:
        columns = list(columns)
        cheapest = {i: min(columns[i]) for i in dollar_columns}
        base = sum(cheapest.values())
        for i in dollar_columns:
            columns[i] = [1 - (v - cheapest[i]) / base for v in columns[i]] if base > 0 else [1.0] * len(passed)
        static = tuple((_AsGiven(), w) if s.in_dollars else (s, w) for s, w in static)
    return _rank_by_spread(passed, static, columns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, default="shipped")
    parser.add_argument("--load", type=float, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--traces", default=TRACES)
    parser.add_argument("--dollars", choices=["spread", "relative"], default="spread", help="see the docstring")
    parser.add_argument(
        "--stake-cap", type=int, default=None, help="in place of MAX_STAKE_LEVEL (dollars_at_stake_gpu_hours)"
    )
    parser.add_argument(
        "--stake-scores", default=None, help="comma list of the scores `dollars_at_stake_gpu_hours` multiplies"
    )
    parser.add_argument("--longest", type=int, default=0, help="also print the N jobs that waited longest")
    parser.add_argument("settings", nargs="*", help="name=value or w.<score>=value")
    args = parser.parse_args()
    if args.dollars == "relative":
        candidate_plan._rank_statically = _rank_relative
    # the engine's constants, read at each call, changed in this process only (an experiment)
    if args.stake_cap is not None:
        policy_module.MAX_STAKE_LEVEL = args.stake_cap
    if args.stake_scores is not None:
        staked = tuple(args.stake_scores.split(","))
        admission.Plugins.dollar_scores = property(lambda _: staked)
    policy = changed_policy(args.settings)

    class Changed(policies.Mcsched):
        def __init__(self, seed: int = 0) -> None:
            super().__init__(seed, policy)

    policies.PLACERS["mcsched"] = Changed
    t = args.traces
    fleet = load_fleet(f"{t}/openb_fleet_split.csv", f"{t}/openb_node_list_gpu_node.csv", 0.1)
    jobs = compress_arrivals(variant(args.variant, read_jobs(f"{t}/openb_pod_list_default.csv")[0], fleet), args.load)
    # `compare._one`, keeping the run so that its longest waits can be shown
    run = replay(fleet, jittered(jobs, args.seed), Changed(seed=args.seed))
    s = summarise(run)
    print(
        f"{args.variant} load {args.load:g} seed {args.seed} {' '.join(args.settings) or '(shipped policy)'}"
        f"{' --dollars relative' if args.dollars == 'relative' else ''}"
        f"{f' --stake-cap {args.stake_cap}' if args.stake_cap is not None else ''}"
        f"{f' --stake-scores {args.stake_scores}' if args.stake_scores is not None else ''}: "
        f"mean wait {s.mean_wait:.0f} s (normal {s.mean_wait_normal:.0f}, low {s.mean_wait_low:.0f}), "
        f"p95 {s.p95_wait:.0f} s, multi-GPU max {s.max_wait_multi_gpu:.0f} s, cost ${s.total_cost:,.0f}"
    )
    for r in sorted(run.runs, key=lambda r: -r.wait)[: args.longest]:
        j = r.job
        print(
            f"  waited {r.wait:,.0f} s: {j.name} ({j.gpus} GPU x {j.gpu_milli} milli, "
            f"types {list(j.gpu_types) or 'any'}, "
            f"{j.duration:,.0f} s, arrived {j.arrival:,.0f} s) on {r.cluster}/{r.pool}"
        )


if __name__ == "__main__":
    main()
