"""`mcsched reclaim`: list the reservations held for nothing (expired leases, idle grants) and free them.

Freeing is one admission cycle: it reclaims them (each with an audit entry by `mcsched-reclaim`)
and gives their GPUs to the queue at once. The API servers' admission timer does the same on its own.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from airflow_mcsched.cli.report import emit_models

COLUMNS = ("placement_id", "team", "cluster", "pool", "gpu_type", "gpus", "reason", "held_seconds", "message")


def cmd_reclaim(args: argparse.Namespace) -> int:
    from airflow.utils.session import create_session

    from airflow_mcsched.service.placement_store import PlacementStore
    from airflow_mcsched.service.policy_source import current_policy
    from airflow_mcsched.service.report_store import ReportStore

    policy = current_policy()
    now = datetime.now(UTC)
    with create_session() as session:
        candidates = ReportStore(session).reclaimable(policy, now)
        emit_models(candidates, args.format, "reservations", COLUMNS)
        if args.dry_run or not candidates:
            if args.format == "table":
                print(f"\n{len(candidates)} to reclaim" + (" (dry run, nothing changed)" if args.dry_run else ""))
            return 0
        report = PlacementStore(session, policy).run_cycle(now)
    if args.format == "table":
        print(f"\nreclaimed {len(candidates)}; the cycle then admitted {report.admitted} waiting request(s)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reclaim", help="free reservations whose lease expired or whose pod never started")
    p.add_argument("--dry-run", action="store_true", help="list them, change nothing")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=cmd_reclaim)
