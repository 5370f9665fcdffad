"""`mcsched sync`: read every cluster's capacity now (or in a loop) and record it in the metadata DB."""

from __future__ import annotations

import argparse
import os
import socket
import threading

from airflow_mcsched.access.breaker import BreakerSettings
from airflow_mcsched.cli.table import render_table


def build_sync(timeout: float, breaker: BreakerSettings):
    """The capacity sync on the metadata DB, through the clusters' Airflow connections."""
    from airflow.utils.session import create_session

    from airflow_mcsched.access.connections import ConnectionClients
    from airflow_mcsched.access.sync import CapacitySync
    from airflow_mcsched.service.sync_ledger import DbSyncLedger

    owner = f"{socket.gethostname()}:{os.getpid()}"
    return CapacitySync(DbSyncLedger(create_session, breaker), ConnectionClients(), owner=owner, timeout=timeout)


def cmd_sync(args: argparse.Namespace) -> int:
    from airflow_mcsched.service.settings import breaker_from_airflow_conf

    sync = build_sync(args.timeout, breaker_from_airflow_conf())
    if not args.once:
        print(f"syncing every {args.interval:.0f}s; Ctrl-C stops")
        sync.run(args.interval, threading.Event())
        return 0
    outcomes = sync.sync_once(args.cluster or None)
    rows = [
        [
            o.cluster,
            "yes" if o.synced else "lease held elsewhere",
            "healthy" if o.healthy else "UNHEALTHY",
            f"{o.seconds:.2f}",
            o.error or "",
        ]
        for o in outcomes
    ]
    print(render_table(["CLUSTER", "SYNCED", "HEALTH", "SECONDS", "ERROR"], rows))
    return 0 if all(o.healthy or not o.synced for o in outcomes) else 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sync", help="read live capacity of every cluster into the metadata DB")
    p.add_argument("--once", action="store_true", help="one round, print the outcome, exit 1 if any cluster failed")
    p.add_argument("--interval", type=float, default=15.0, help="seconds between rounds")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds allowed per cluster API call")
    p.add_argument("--cluster", action="append", help="only this cluster (repeatable)")
    p.set_defaults(func=cmd_sync)
