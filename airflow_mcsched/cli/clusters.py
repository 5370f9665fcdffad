"""`mcsched clusters ...`: declarative management of cluster profiles in the metadata DB.

Runs where Airflow's ORM is allowed (a shell with the Airflow configuration), like `airflow` itself.
"""

from __future__ import annotations

import argparse
import getpass
import json

from airflow_mcsched.access.profiles import ClusterState
from airflow_mcsched.cli.table import render_table


def _actor() -> str:
    return f"cli:{getpass.getuser()}"


def _session():
    from airflow.utils.session import create_session

    return create_session()


def cmd_apply(args: argparse.Namespace) -> int:
    from airflow_mcsched.access.fleet_file import load_fleet_file
    from airflow_mcsched.service.cluster_store import ClusterStore

    fleet = load_fleet_file(args.file)  # raises FleetFileError before the DB is touched
    with _session() as session:
        plan = ClusterStore(session).apply(fleet, _actor(), dry_run=args.dry_run, prune=args.prune)
    print(plan.describe())
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from airflow_mcsched.service.cluster_store import ClusterStore
    from airflow_mcsched.service.status_store import StatusStore

    with _session() as session:
        profiles = ClusterStore(session).list()
        statuses = StatusStore(session).all()
    if args.format == "json":
        out = [
            {
                "profile": p.model_dump(mode="json"),
                "status": statuses[p.name].summary() if p.name in statuses else None,
            }
            for p in profiles
        ]
        print(json.dumps(out, indent=2, default=str))
        return 0
    rows = []
    for p in profiles:
        st = statuses.get(p.name)
        rows.append(
            [
                p.name,
                p.kind.value,
                p.domain,
                p.state.value,
                ",".join(p.gpu_types) or "-",
                p.total_gpus,
                st.free_gpus if st else "?",
                st.health_word if st else "never synced",
            ]
        )
    print(render_table(["CLUSTER", "KIND", "FAILURE DOMAIN", "STATE", "GPU TYPES", "GPUS", "FREE", "HEALTH"], rows))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from airflow_mcsched.service.cluster_store import ClusterStore
    from airflow_mcsched.service.status_store import StatusStore

    with _session() as session:
        profile = ClusterStore(session).get(args.name)
        status = StatusStore(session).all().get(args.name)
    doc = {"profile": profile.model_dump(mode="json"), "status": status.summary() if status else None}
    print(json.dumps(doc, indent=2, default=str))
    return 0


def _set_state(state: ClusterState):
    def run(args: argparse.Namespace) -> int:
        from airflow_mcsched.service.cluster_store import ClusterStore

        with _session() as session:
            ClusterStore(session).set_state(args.name, state, _actor(), reason=args.reason)
        print(f"{args.name}: {state.value}")
        return 0

    return run


def cmd_delete(args: argparse.Namespace) -> int:
    from airflow_mcsched.service.cluster_store import ClusterStore

    with _session() as session:
        ClusterStore(session).delete(args.name, _actor())
    print(f"deleted {args.name}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("clusters", help="manage cluster profiles (apply, list, show, cordon, delete)")
    cs = p.add_subparsers(dest="clusters_command", required=True)

    a = cs.add_parser("apply", help="create or update clusters from a fleet file (idempotent)")
    a.add_argument("-f", "--file", required=True, help="fleet YAML file")
    a.add_argument("--dry-run", action="store_true", help="show the diff, write nothing")
    a.add_argument("--prune", action="store_true", help="also delete clusters the file does not declare")
    a.set_defaults(func=cmd_apply)

    ls = cs.add_parser("list", help="list clusters with their state and last capacity read")
    ls.add_argument("--format", choices=["table", "json"], default="table")
    ls.set_defaults(func=cmd_list)

    sh = cs.add_parser("show", help="one cluster's profile and status as JSON")
    sh.add_argument("name")
    sh.set_defaults(func=cmd_show)

    for verb, state, help_ in [
        ("cordon", ClusterState.CORDONED, "take no new work on a cluster"),
        ("uncordon", ClusterState.ACTIVE, "take new work again"),
        ("maintenance", ClusterState.MAINTENANCE, "mark a cluster as under maintenance"),
    ]:
        c = cs.add_parser(verb, help=help_)
        c.add_argument("name")
        c.add_argument("--reason", default="", help="recorded in the audit trail")
        c.set_defaults(func=_set_state(state))

    d = cs.add_parser("delete", help="delete a cluster profile (its running pods are not touched)")
    d.add_argument("name")
    d.set_defaults(func=cmd_delete)
