"""`mcsched purge`: drop placement history and audit entries past their age (or say what would go).

Ages come from the flags, else from `[mcsched] placement_retention` and `audit_retention` (which
the API servers also apply on their own, hourly). Only placements in a final state go, with their
reservations and the lists of rejections no other placement names; cost reports then cover what
is left, so export the months you need first (`mcsched report cost --format csv`).
"""

from __future__ import annotations

import argparse
import json

from airflow_mcsched.governance.retention import Retention, parse_age

PURGE_ACTOR = "mcsched-purge"


def _retention(args: argparse.Namespace) -> Retention:
    if args.placements_older_than or args.audit_older_than:
        return Retention(
            placements=parse_age(args.placements_older_than, "--placements-older-than")
            if args.placements_older_than
            else None,
            audit=parse_age(args.audit_older_than, "--audit-older-than") if args.audit_older_than else None,
        )
    from airflow_mcsched.service.settings import retention_from_airflow_conf

    configured = retention_from_airflow_conf()
    if not configured.purges_anything:
        raise ValueError(
            "nothing to purge: give --placements-older-than (for example 90d) and/or --audit-older-than, "
            "or set [mcsched] placement_retention / audit_retention"
        )
    return configured


def cmd_purge(args: argparse.Namespace) -> int:
    from airflow_mcsched.service.retention_store import purge_now

    report = purge_now(_retention(args), PURGE_ACTOR, dry_run=args.dry_run)
    if args.format == "json":
        print(json.dumps({**report.as_dict(), "dry_run": args.dry_run}, indent=2, default=str))
        return 0
    verb = "would purge" if args.dry_run else "purged"
    print(
        f"{verb} {report.placements} placement(s) ended before {report.placements_ended_before or 'never'}, "
        f"{report.reservations} reservation(s), {report.rejection_lists} list(s) of rejections, "
        f"{report.audit_entries} audit entr{'y' if report.audit_entries == 1 else 'ies'} made before "
        f"{report.audit_before or 'never'}"
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("purge", help="drop placement history and audit entries past their age")
    p.add_argument("--placements-older-than", metavar="AGE", help="final placements that ended this long ago: 90d")
    p.add_argument("--audit-older-than", metavar="AGE", help="audit entries made this long ago: 52w")
    p.add_argument("--dry-run", action="store_true", help="count what would go, change nothing")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=cmd_purge)
