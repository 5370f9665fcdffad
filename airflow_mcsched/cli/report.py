"""`mcsched report ...`: cost, usage, capacity and audit reports read straight from the metadata DB.

Runs where Airflow's ORM is allowed (a shell with the Airflow configuration), like `mcsched
clusters`. The figures are the same functions the HTTP API serves, so both always agree.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from airflow_mcsched.cli.table import render_table

FORMATS = ("table", "csv", "json")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) >= 0.01 or value == 0 else f"{value:.6f}"
    if isinstance(value, dict):
        return " ".join(f"{k}:{v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ",".join(map(str, value)) or "-"
    return "-" if value is None else str(value)


def emit(columns: Sequence[str], rows: Sequence[Mapping[str, Any]], fmt: str, document: Any) -> None:
    """Print rows as an aligned table, CSV (the API's CSV), or the API's JSON document."""
    from airflow_mcsched.governance.report_format import to_csv

    if fmt == "json":
        print(json.dumps(document, indent=2, default=str))
    elif fmt == "csv":
        print(to_csv(columns, rows), end="")
    else:
        print(render_table([c.upper() for c in columns], [[_cell(r.get(c)) for c in columns] for r in rows]))


def emit_models(models: Sequence[BaseModel], fmt: str, key: str, columns: Sequence[str] | None = None) -> None:
    rows = [m.model_dump(mode="json") for m in models]
    cols = list(columns or (rows[0].keys() if rows else ()))
    emit(cols, rows, fmt, {key: rows})


def with_store(build: Callable[[Any, datetime], Any]) -> Any:
    from airflow.utils.session import create_session

    from airflow_mcsched.service.report_store import ReportStore

    with create_session() as session:
        return build(ReportStore(session), datetime.now(UTC))


def _window(args: argparse.Namespace, now: datetime):
    from airflow_mcsched.governance.window import TimeWindow

    return TimeWindow.parse(args.since, args.until, now)


def cmd_cost(args: argparse.Namespace) -> int:
    from airflow_mcsched.governance.report_format import cost_document
    from airflow_mcsched.governance.usage import parse_group_by
    from airflow_mcsched.service.report_store import CostQuery

    def build(store, now):
        return store.cost(CostQuery(_window(args, now), parse_group_by(args.group_by), args.team, args.project), now)

    report = with_store(build)
    doc = cost_document(report)
    emit(report.columns, doc["rows"], args.format, doc)
    if args.format == "table":
        print(f"\n{report.since:%Y-%m-%d %H:%M} to {report.until:%Y-%m-%d %H:%M} UTC: "
              f"{report.gpu_hours:.2f} GPU-hours, cost {report.cost:.2f}")  # fmt: skip
    return 0


def cmd_top(args: argparse.Namespace) -> int:
    from airflow_mcsched.governance.report_format import cost_document

    report = with_store(lambda store, now: store.top(_window(args, now), args.by, args.n, now))
    doc = cost_document(report)
    emit(report.columns, doc["rows"], args.format, doc)
    return 0


def cmd_utilisation(args: argparse.Namespace) -> int:
    emit_models(with_store(lambda store, now: store.utilisation(_window(args, now), now)), args.format, "clusters")
    return 0


def cmd_waiting(args: argparse.Namespace) -> int:
    lines = with_store(lambda store, now: store.waiting(_window(args, now), now, team=args.team))
    emit_models(lines, args.format, "teams")
    return 0


def cmd_quota(args: argparse.Namespace) -> int:
    from airflow_mcsched.service.policy_source import current_policy

    policy = current_policy()
    emit_models(with_store(lambda store, now: store.quota(policy)), args.format, "quotas")
    return 0


CAPACITY_COLUMNS = ("cluster", "gpu_type", "gpus", "gpus_free", "gpus_reserved", "largest_free_block",
                    "free_histogram", "flags")  # fmt: skip


def cmd_capacity(args: argparse.Namespace) -> int:
    from airflow_mcsched.service.policy_source import current_policy

    policy = current_policy()

    def build(store, now):
        return store.capacity(policy, now), store.forecast(now, args.forecast_days, args.forecast_weeks)

    capacity, forecast = with_store(build)
    if args.format == "json":
        doc = {**capacity.model_dump(mode="json"), "forecast": [f.model_dump(mode="json") for f in forecast]}
        print(json.dumps(doc, indent=2))
        return 0
    rows = [
        {"cluster": c.cluster, "flags": c.flags, **line.model_dump()} for c in capacity.clusters for line in c.gpu_types
    ] + [{"cluster": c.cluster, "flags": c.flags} for c in capacity.clusters if not c.gpu_types]
    emit(CAPACITY_COLUMNS, rows, args.format, None)
    if forecast and args.format == "table":
        print(f"\nforecast of GPU-hours ({forecast[0].method}, last {args.forecast_weeks} weeks):")
        days = [d.isoformat() for d in forecast[0].days]
        rows = [[f.key, *map(_cell, f.gpu_hours), _cell(f.total_gpu_hours)] for f in forecast]
        print(render_table(["TEAM/GPU TYPE", *days, "TOTAL"], rows))
    return 0


AUDIT_COLUMNS = ("id", "at", "actor", "action", "subject", "details")


def cmd_audit(args: argparse.Namespace) -> int:
    from airflow_mcsched.governance.window import parse_instant
    from airflow_mcsched.service.audit_store import audit_page

    def build(store, now):
        since, until = parse_instant(args.since, "since", now), parse_instant(args.until, "until", now)
        return audit_page(store.session, since, until, args.action, args.actor, args.subject, args.limit, args.cursor)

    page = with_store(build)
    rows = [e.model_dump(mode="json") for e in page.entries]
    if args.format == "table":
        for r in rows:
            r["details"] = json.dumps(r["details"], default=str)[:100]
    emit(AUDIT_COLUMNS, rows, args.format, page.model_dump(mode="json"))
    if page.next_cursor and args.format == "table":
        print(f"\nmore: --cursor {page.next_cursor}")
    return 0


def _window_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", help="start: ISO date/time, 'now' or an age like 7d (default: 7 days before --until)")
    p.add_argument("--until", help="end, exclusive (default: now)")


def _format_arg(p: argparse.ArgumentParser, formats: Sequence[str] = FORMATS) -> None:
    p.add_argument("--format", choices=formats, default="table")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="cost, utilisation, waiting, quota, capacity and audit reports")
    rs = p.add_subparsers(dest="report_command", required=True)

    c = rs.add_parser("cost", help="GPU-hours and cost per group over a window")
    _window_args(c)
    c.add_argument("--group-by", default="team", help="comma-separated: team,project,dag,cluster,pool,gpu_type")
    c.add_argument("--team", help="only this team")
    c.add_argument("--project", help="only this project")
    _format_arg(c)
    c.set_defaults(func=cmd_cost)

    t = rs.add_parser("top", help="the teams or projects that cost most")
    _window_args(t)
    t.add_argument("--by", choices=["team", "project"], default="team")
    t.add_argument("-n", type=int, default=10, help="how many")
    _format_arg(t)
    t.set_defaults(func=cmd_top)

    u = rs.add_parser("utilisation", help="per cluster: GPU-hours used, reserved, free")
    _window_args(u)
    _format_arg(u)
    u.set_defaults(func=cmd_utilisation)

    w = rs.add_parser("waiting", help="time queued before admission per team")
    _window_args(w)
    w.add_argument("--team", help="only this team")
    _format_arg(w)
    w.set_defaults(func=cmd_waiting)

    q = rs.add_parser("quota", help="GPUs held per team against its quota, now")
    _format_arg(q)
    q.set_defaults(func=cmd_quota)

    cap = rs.add_parser("capacity", help="free and reserved GPUs per cluster and GPU type now, and a forecast")
    cap.add_argument("--forecast-days", type=int, default=7)
    cap.add_argument("--forecast-weeks", type=int, default=4, help="weeks of history the forecast averages")
    _format_arg(cap, ("table", "json"))
    cap.set_defaults(func=cmd_capacity)

    a = rs.add_parser("audit", help="the audit trail, newest first")
    _window_args(a)
    a.add_argument("--action", help="exact, or a prefix ending in '*' (placement.*)")
    a.add_argument("--actor")
    a.add_argument("--subject")
    a.add_argument("--limit", type=int, default=50)
    a.add_argument("--cursor", help="from the previous page's 'more:' line")
    _format_arg(a)
    a.set_defaults(func=cmd_audit)
