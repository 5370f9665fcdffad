"""The replay tables of docs/benchmarks.md: every policy at each load and trace variant, checked against the targets.

    # one JSON file per (variant, load), from the CLI, e.g.:
    .venv/bin/mcsched replay --pods $T/openb_pod_list_default.csv --nodes $T/openb_node_list_gpu_node.csv \\
        --fleet $T/openb_fleet_split.csv --scale 0.1 --load 300 --policy all --seeds 5 --variant shipped \\
        --format json > results/shipped-300.json
    # then the Markdown tables with the target checks:
    .venv/bin/python benchmarks/replay_tables.py results/

Targets (issue #9), at every setting: mean queueing delay within 5 % of the best baseline or better,
total cost at or below the `cheapest` baseline, and multi-GPU pods never starved (their max delay
below every baseline's). `pooled` is a reference (one cluster of every node, all data local), not a
baseline the targets are held against.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

REFERENCE = "pooled"
ENGINE = "mcsched"
COLUMNS = (
    ("mean_wait", "mean wait s", "{:.0f}"),
    ("mean_wait_normal", "normal / low", "{:.0f}"),
    ("p95_wait", "p95 wait s", "{:.0f}"),
    ("max_wait", "max wait s", "{:.0f}"),
    ("max_wait_multi_gpu", "max wait multi-GPU s", "{:.0f}"),
    ("gpu_allocation", "GPU alloc", "{:.3f}"),
    ("total_cost", "cost $", "{:,.0f}"),
    ("data_moved_gib", "data moved GiB", "{:,.0f}"),
    ("unplaceable", "unpl.", "{}"),
)


def targets(results: dict[str, dict]) -> list[tuple[str, bool, str]]:
    """(target, met, figures) for one setting."""
    engine = results[ENGINE]
    baselines = {k: v for k, v in results.items() if k not in (ENGINE, REFERENCE)}
    best_name = min(baselines, key=lambda k: baselines[k]["mean_wait"])
    best = baselines[best_name]["mean_wait"]
    cheapest = baselines["cheapest"]["total_cost"]
    multi = min(v["max_wait_multi_gpu"] for v in baselines.values())
    return [
        (
            "mean wait within 5 % of the best baseline",
            engine["mean_wait"] <= best * 1.05 + 1e-9,
            f"{engine['mean_wait']:.0f} s vs {best_name} {best:.0f} s",
        ),
        (
            "cost at or below `cheapest`",
            engine["total_cost"] <= cheapest + 1e-6,
            f"${engine['total_cost']:,.0f} vs ${cheapest:,.0f}",
        ),
        (
            "multi-GPU max wait below every baseline's",
            engine["max_wait_multi_gpu"] < multi or engine["max_wait_multi_gpu"] == 0,
            f"{engine['max_wait_multi_gpu']:.0f} s vs best baseline {multi:.0f} s",
        ),
    ]


def _cell(result: dict, key: str, fmt: str) -> str:
    """One figure; the mean wait of `normal` jobs comes with that of `low` ones ("-" in older files)."""
    if key not in result:
        return "-"
    if key == "mean_wait_normal":
        return f"{fmt.format(result[key])} / {fmt.format(result['mean_wait_low'])}"
    return fmt.format(result[key])


def markdown(name: str, results: dict[str, dict]) -> str:
    seeds = next(iter(results.values()))["seeds"]
    lines = [f"#### {name} (median of {seeds} seeds)", ""]
    lines.append("| policy | " + " | ".join(h for _, h, _ in COLUMNS) + " | mean wait min-max |")
    lines.append("|" + " --- |" * (len(COLUMNS) + 2))
    for policy, r in results.items():
        low, high = r["spread"]["mean_wait"]
        cells = [_cell(r, k, fmt) for k, _, fmt in COLUMNS]
        label = f"**{policy}**" if policy == ENGINE else policy
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {low:.0f}-{high:.0f} |")
    lines.append("")
    for target, met, figures in targets(results):
        lines.append(f"- {'met' if met else '**not met**'}: {target} ({figures})")
    return "\n".join(lines) + "\n"


def summary(settings: list[tuple[str, dict[str, dict]]]) -> str:
    """One row per setting, one column per target: what the per-setting sections say, at a glance."""
    names = [t for t, _, _ in targets(settings[0][1])] if settings else []
    lines = ["| setting | " + " | ".join(names) + " |", "|" + " --- |" * (len(names) + 1)]
    for name, results in settings:
        cells = [f"{'met' if met else '**not met**'} ({figures})" for _, met, figures in targets(results)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="directory of <variant>-<load>.json files from `mcsched replay`")
    args = parser.parse_args()
    files = sorted(
        args.results.glob("*.json"), key=lambda p: (p.stem.rsplit("-", 1)[0], float(p.stem.rsplit("-", 1)[1]))
    )
    settings = []
    for path in files:
        variant, load = path.stem.rsplit("-", 1)
        settings.append((f"{variant}, load x{load}", json.loads(path.read_text())))
    print(summary(settings))
    for name, results in settings:
        print(markdown(name, results))


if __name__ == "__main__":
    main()
