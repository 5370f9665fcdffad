"""`mcsched virtual-clusters up|status|down`: local Kubernetes API servers standing in for a fleet.

`up` starts one server process per cluster of a fleet file, prints where they are, and writes
kubeconfigs, Airflow connections and a state file into the state directory; it stays in the
foreground until Ctrl-C unless `--detach`. `status` and `down` work from that state file.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
import urllib.request
from pathlib import Path
from typing import Any

DEFAULT_STATE_DIR = Path(".mcsched/virtual-clusters")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("virtual-clusters", help="start local virtual Kubernetes clusters for a fleet file")
    commands = parser.add_subparsers(dest="vc_command", required=True)

    up = commands.add_parser("up", help="start one virtual cluster per cluster of the fleet file")
    up.add_argument("-f", "--file", required=True, type=Path, help="fleet file (YAML), e.g. examples/fleet.yaml")
    up.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR, help=f"default {DEFAULT_STATE_DIR}")
    up.add_argument("--detach", action="store_true", help="return once the servers run; stop them with `down`")
    up.add_argument("--cluster", action="append", dest="only", help="start only this cluster (repeatable)")
    up.add_argument("--token", help="bearer token for every cluster (default: a random one per cluster)")
    up.add_argument("--runtime", choices=["auto", "timed", "process"], default="auto",
                    help="default container runtime (auto: process when the container has a command)")  # fmt: skip
    up.add_argument("--duration", type=float, default=1.0, help="default run time of timed containers, seconds")
    up.add_argument("--container-start", type=float, default=0.05, help="seconds from binding to running")
    up.set_defaults(func=_up)

    status = commands.add_parser("status", help="show the virtual clusters started with `up`")
    status.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR)
    status.add_argument("--json", action="store_true", help="print the summaries as JSON")
    status.set_defaults(func=_status)

    down = commands.add_parser("down", help="stop the virtual clusters started with `up`")
    down.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR)
    down.set_defaults(func=_down)


def _summary(url: str, token: str) -> dict[str, Any] | None:
    request = urllib.request.Request(url + "/_virtual/summary", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=3) as response:
            return json.loads(response.read())
    except OSError:
        return None


def _print_clusters(records: list[Any]) -> None:
    from airflow_mcsched.cli.table import render_table
    from airflow_mcsched.virtual.state_file import server_alive

    headers = ["CLUSTER", "ADDRESS", "PID", "STATE", "NODES", "GPUS FREE", "PODS RUNNING", "PENDING", "CONNECTION"]
    rows: list[list[str]] = []
    for r in records:
        summary = _summary(r.url, r.token) if server_alive(r.pid) else None
        if summary is None:
            rows.append([r.name, r.url, str(r.pid), "down", "-", "-", "-", "-", r.conn_id])
            continue
        ready = sum(1 for n in summary["nodes"] if n["ready"])
        pods = summary["pods"]
        rows.append(
            [
                r.name, r.url, str(r.pid), "up", f"{ready}/{len(summary['nodes'])}",
                f"{summary['gpus_free']}/{summary['gpus']}", str(pods.get("Running", 0)),
                str(pods.get("Pending", 0)), r.conn_id,
            ]
        )  # fmt: skip
    print(render_table(headers, rows))


def _up(args: argparse.Namespace) -> int:
    from airflow_mcsched.virtual.fleet import VirtualFleet
    from airflow_mcsched.virtual.options import VirtualClusterOptions
    from airflow_mcsched.virtual.state_file import FleetState, server_alive

    state_dir: Path = args.state_dir.resolve()
    previous = FleetState.load(state_dir)
    if previous and any(server_alive(c.pid) for c in previous.clusters):
        raise ValueError(
            f"virtual clusters already run from {state_dir}; stop them with `mcsched virtual-clusters down`"
        )
    options = VirtualClusterOptions(
        default_runtime=args.runtime,
        default_duration_seconds=args.duration,
        container_start_seconds=args.container_start,
    )
    stopping = False

    def request_stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    if not args.detach:
        # Ctrl-C and SIGTERM only ask to stop, from the start: one arriving while the fleet starts or
        # its table prints raised KeyboardInterrupt past the loop below, leaving the servers running
        # (and holding a caller's pipes open)
        signal.signal(signal.SIGINT, request_stop)
        signal.signal(signal.SIGTERM, request_stop)
    fleet = VirtualFleet.start(
        args.file,
        mode="process",
        options=options,
        token=args.token,
        only=args.only,
        state_dir=state_dir,
        detach=args.detach,
    )
    state = FleetState.load(state_dir)
    assert state is not None and fleet.files is not None
    _print_clusters(state.clusters)
    print(f"\nkubeconfigs:   {state_dir / 'kubeconfig'}/<cluster>.yaml")
    print(f"connections:   airflow connections import {fleet.files.connections_json}")
    print(f"           or: set -a; . {fleet.files.connections_env}; set +a")
    if args.detach:
        print("\nrunning in the background; stop with: mcsched virtual-clusters down" + _state_dir_flag(args))
        return 0
    print("\nserving; press Ctrl-C to stop")
    while not stopping and any(h.process and h.process.poll() is None for h in fleet):
        time.sleep(0.3)
    fleet.stop()
    _remove_state(state_dir, state)
    print("virtual clusters stopped")
    return 0


def _state_dir_flag(args: argparse.Namespace) -> str:
    return "" if args.state_dir == DEFAULT_STATE_DIR else f" --state-dir {args.state_dir}"


def _status(args: argparse.Namespace) -> int:
    from airflow_mcsched.virtual.state_file import FleetState

    state = FleetState.load(args.state_dir.resolve())
    if state is None:
        print(f"no virtual clusters recorded in {args.state_dir}")
        return 1
    if args.json:
        print(json.dumps({r.name: _summary(r.url, r.token) for r in state.clusters}, indent=2))
        return 0
    _print_clusters(state.clusters)
    return 0


def _remove_state(state_dir: Path, state: Any) -> None:
    from airflow_mcsched.virtual.state_file import STATE_FILE

    for name in [*state.files, str(state_dir / STATE_FILE)]:
        Path(name).unlink(missing_ok=True)


def _down(args: argparse.Namespace) -> int:
    from airflow_mcsched.virtual.state_file import FleetState, server_alive

    state_dir = args.state_dir.resolve()
    state = FleetState.load(state_dir)
    if state is None:
        print(f"no virtual clusters recorded in {state_dir}")
        return 0
    running = [c for c in state.clusters if server_alive(c.pid)]
    for record in running:
        os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while any(server_alive(c.pid) for c in running) and time.monotonic() < deadline:
        time.sleep(0.1)
    for record in running:
        if server_alive(record.pid):
            os.kill(record.pid, signal.SIGKILL)
    _remove_state(state_dir, state)
    print(f"stopped {len(running)} virtual cluster(s)")
    return 0
