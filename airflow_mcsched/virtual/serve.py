"""Run one virtual cluster as its own process: `python -m airflow_mcsched.virtual.serve ...`.

Prints one JSON line `{"name", "url", "port", "pid"}` on stdout once it answers requests, then
serves until SIGTERM or SIGINT, when it kills its containers and exits. The bearer token comes
in $MCSCHED_VIRTUAL_TOKEN. `VirtualFleet` in process mode and `mcsched virtual-clusters up`
start these.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path

from airflow_mcsched.access.profiles import ClusterProfile
from airflow_mcsched.virtual.cluster import VirtualCluster
from airflow_mcsched.virtual.options import VirtualClusterOptions
from airflow_mcsched.virtual.server import ClusterServer

TOKEN_ENV = "MCSCHED_VIRTUAL_TOKEN"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m airflow_mcsched.virtual.serve")
    parser.add_argument("--profile-json", required=True, help="the ClusterProfile as JSON")
    parser.add_argument("--options-json", default="{}", help="VirtualClusterOptions as JSON")
    parser.add_argument("--token", default=os.environ.get(TOKEN_ENV), help=f"default: ${TOKEN_ENV}")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cluster-index", type=int, default=0)
    parser.add_argument("--work-dir", type=Path)
    args = parser.parse_args(argv)
    if not args.token:
        parser.error(f"give the bearer token in ${TOKEN_ENV} (or --token=...)")

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    profile = ClusterProfile.model_validate_json(args.profile_json)
    options = VirtualClusterOptions.from_dict(json.loads(args.options_json))
    cluster = VirtualCluster(profile, options, args.token, args.work_dir, args.cluster_index)
    server = ClusterServer(cluster, args.port).start()
    print(json.dumps({"name": profile.name, "url": server.url, "port": server.port, "pid": os.getpid()}), flush=True)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # nobody reads stdout any more
    while not stop.wait(0.5):
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
