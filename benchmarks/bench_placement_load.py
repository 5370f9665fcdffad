"""Benchmark: the placement API under many concurrent clients, with the invariants checked afterwards.

A real `airflow api-server` (plugin inside) on a fresh metadata DB, the example fleet as virtual
clusters, and N clients that submit, wait for admission, start, renew, release or abandon
placements for a bounded time (see `benchmarks/placement_load.py`). Prints placements/s, latency
per endpoint, errors, and whether the invariants held (no over-commit, every grant ended, every
request answered). Exits 1 when an invariant failed.

    .venv/bin/python benchmarks/bench_placement_load.py --db postgres --clients 32 --seconds 30
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.placement_load import LoadSettings, format_report, run_load


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--lease-seconds", type=float, default=LoadSettings.lease_seconds)
    parser.add_argument("--api-workers", type=int, default=LoadSettings.api_workers)
    parser.add_argument(
        "--hold",
        type=lambda v: tuple(float(x) for x in v.split(",")),
        default=LoadSettings.hold_seconds,
        help="MIN,MAX seconds a client holds a started grant before releasing it (default 0.2,0.8)",
    )
    parser.add_argument("--workdir", type=Path, help="keep the Airflow home (logs) here instead of a temporary one")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON object")
    args = parser.parse_args(argv)

    settings = LoadSettings(
        clients=args.clients,
        seconds=args.seconds,
        lease_seconds=args.lease_seconds,
        api_workers=args.api_workers,
        hold_seconds=args.hold,
    )
    outcome = run_load(args.db, settings, args.workdir)
    print(format_report(args.db, settings, outcome.figures, outcome.invariants))
    print(f"drained (abandoned leases reclaimed) {outcome.drain_seconds:.1f} s after the clients stopped")
    if args.json:
        print(json.dumps(outcome.figures, default=str))
    return 0 if all(i.ok for i in outcome.invariants) else 1


if __name__ == "__main__":
    raise SystemExit(main())
