"""`mcsched demo`: the project's main job on one machine, with virtual clusters and SQLite.

It prepares an Airflow home (SQLite metadata DB, migrated with our tables), starts the example
fleet as virtual Kubernetes clusters, shows their nodes and free GPUs through the real kubernetes
client, records the fleet's profiles and a live capacity read in the metadata DB, and asks the
placement engine where three typical steps would go, with its explanations.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from airflow_mcsched.cli.table import render_table

REPO = Path(__file__).resolve().parents[2]
DEFAULT_FLEET = REPO / "examples" / "fleet.yaml"


def prepare_airflow_home(home: Path) -> Path:
    """An Airflow home with SQLite and a stable shared JWT secret; must run before Airflow is imported."""
    airflow_home = home / "airflow"
    (airflow_home / "dags").mkdir(parents=True, exist_ok=True)
    secret_file = home / "jwt_secret"
    if not secret_file.exists():
        secret_file.write_text(secrets.token_urlsafe(48))
        secret_file.chmod(0o600)
    os.environ.update(
        {
            "AIRFLOW_HOME": str(airflow_home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home / 'airflow.db'}",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags_examples"),
            "AIRFLOW__API_AUTH__JWT_SECRET": secret_file.read_text().strip(),
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        }
    )
    return airflow_home


def _step(text: str) -> None:
    print(f"\n== {text}")


def _migrate() -> None:
    airflow = Path(sys.executable).with_name("airflow")
    subprocess.run([str(airflow), "db", "migrate"], check=True, stdout=subprocess.DEVNULL)


def _show_nodes(fleet) -> None:
    rows = []
    for handle in fleet:
        for node in handle.core_v1().list_node().items:
            labels = node.metadata.labels or {}
            alloc = node.status.allocatable or {}
            rows.append(
                [
                    handle.name,
                    node.metadata.name,
                    labels.get("mcsched.io/node-pool", ""),
                    labels.get("nvidia.com/gpu.product", "-"),
                    alloc.get("nvidia.com/gpu", "0"),
                    alloc.get("cpu", ""),
                    alloc.get("memory", ""),
                ]
            )
    print(render_table(["CLUSTER", "NODE", "POOL", "GPU TYPE", "GPUS", "CPU", "MEMORY"], rows))


def _show_view(view) -> None:
    rows = []
    for cluster in view.clusters:
        for pool in cluster.pools:
            cap = pool.capacity
            hist = cap.histogram.buckets()
            rows.append(
                [
                    cluster.name,
                    pool.name,
                    pool.gpu_type or "cpu",
                    cap.allocatable_gpus,
                    cap.whole_gpus_free,
                    " ".join(f">={k}:{n}" for k, n in hist.items()) if pool.gpu_type else "",
                    f"{pool.price_per_gpu_hour:.2f}" if pool.gpu_type else "",
                    "" if pool.spot_price_per_gpu_hour is None else f"{pool.spot_price_per_gpu_hour:.2f}",
                    "healthy" if cluster.healthy else f"UNHEALTHY: {cluster.error}",
                ]
            )
    print(
        render_table(
            ["CLUSTER", "POOL", "GPU TYPE", "GPUS", "FREE", "NODES WITH FREE GPUS", "$/GPU-H", "SPOT", "HEALTH"],
            rows,
        )
    )


def sample_requests(now: datetime) -> list[dict]:
    """Three steps of a retraining pipeline, as a data scientist would describe them."""
    return [
        {
            "id": "train-llm",
            "arrival": now,
            "team": "nlp",
            "project": "assistant",
            "kind": "training",
            "gpus": 8,
            "gpu_types": ["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"],
            "cpu": 32,
            "memory_gib": 256,
            "expected_duration": timedelta(hours=6),
            "data": [{"location": "imagenet-22k", "size_gib": 1500}],
            "needs_rdma": True,
        },
        {
            "id": "eval-llm",
            "arrival": now + timedelta(seconds=1),
            "team": "nlp",
            "kind": "eval",
            "gpus": 1,
            "min_gpu_memory_gib": 20,
            "cpu": 8,
            "memory_gib": 32,
            "expected_duration": timedelta(minutes=30),
            "interruptible": True,
            "data": [{"location": "s3://ml-eu/eval/", "size_gib": 20}],
        },
        {
            "id": "batch-score",
            "arrival": now + timedelta(seconds=2),
            "team": "ads",
            "kind": "batch",
            "gpu_milli": 500,
            "cpu": 4,
            "memory_gib": 16,
            "expected_duration": timedelta(hours=1),
            "data": [{"location": "clickstream-eu", "size_gib": 200}],
        },
    ]


def _show_decisions(result) -> None:
    for d in result.decisions:
        if d.placement is None:
            print(f"\n- {d.request_id}: {d.outcome.value.upper()} ({d.reason}) {d.summary}")
        else:
            print(f"\n- {d.request_id}: {d.outcome.value.upper()}")
            p = d.placement
            print(f"    -> {p.cluster}/{p.pool} on {', '.join(p.nodes)} at {p.price_per_gpu_hour:.2f}/GPU-h")
            parts = ", ".join(f"{part.name}={part.value:.2f}x{part.weight:g}" for part in p.parts)
            print(f"    score {p.score:.3f} = {parts}")
            for r in d.runners_up[:2]:
                print(f"    runner-up {r.cluster}/{r.pool} score {r.score:.3f} at {r.price_per_gpu_hour:.2f}/GPU-h")
        for rejection in d.rejections:
            print(f"    not {rejection}")


def cmd_demo(args: argparse.Namespace) -> int:
    home = Path(args.home).resolve()
    airflow_home = prepare_airflow_home(home)
    _step(f"Airflow home {airflow_home} (SQLite); `airflow db migrate` creates Airflow's and our tables")
    _migrate()

    from airflow.utils.session import create_session

    from airflow_mcsched.access.connections import ConnectionClients
    from airflow_mcsched.access.fleet_file import load_fleet_file
    from airflow_mcsched.access.sync import CapacitySync
    from airflow_mcsched.decision import Policy, decide, parse_request
    from airflow_mcsched.service.cluster_store import ClusterStore
    from airflow_mcsched.service.sync_ledger import DbSyncLedger
    from airflow_mcsched.service.view_loader import load_view
    from airflow_mcsched.virtual.fleet import VirtualFleet

    spec = load_fleet_file(args.fleet)
    _step(f"Starting {len(spec.clusters)} virtual Kubernetes clusters from {args.fleet} (local API servers)")
    state_dir = home / "virtual-clusters"
    with VirtualFleet.start(spec, mode="process", state_dir=state_dir) as fleet:
        for handle in fleet:
            print(f"  {handle.name:14} {handle.url}  (Airflow connection {handle.conn_id})")
        os.environ.update(fleet.connection_env())
        print(f"  kubeconfigs and Airflow connections written to {state_dir}")

        _step("Their nodes, read through the kubernetes client")
        _show_nodes(fleet)

        _step("Recording the cluster profiles in the Airflow metadata DB (`mcsched clusters apply`)")
        with create_session() as session:
            print(ClusterStore(session).apply(spec, "demo").describe())

        _step("Reading live capacity of every cluster through its Airflow connection (`mcsched sync --once`)")
        sync = CapacitySync(DbSyncLedger(create_session), ConnectionClients(), owner="demo")
        for o in sync.sync_once():
            print(f"  {o.cluster:14} {'healthy' if o.healthy else 'UNHEALTHY ' + str(o.error)}  {o.seconds:.3f}s")

        _step("The global view: free GPUs per cluster and node pool, and how they sit on nodes")
        now = datetime.now(UTC)
        with create_session() as session:
            view = load_view(session, now)
        _show_view(view)

        _step("Where would three steps of a retraining pipeline go? (one admission cycle of the engine)")
        queue = [parse_request(r) for r in sample_requests(now)]
        _show_decisions(decide(view, queue, [], Policy(), now))

        if args.keep_running:
            print(f"\nVirtual clusters keep running (Ctrl-C stops them); state in {state_dir}")
            try:
                import time

                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
    print("\nDemo done; the virtual clusters are stopped.")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the demo on virtual clusters with SQLite")
    p.add_argument("--fleet", default=str(DEFAULT_FLEET), help="fleet file (default: the example fleet)")
    p.add_argument("--home", default=".mcsched", help="where the demo keeps its Airflow home and state")
    p.add_argument("--keep-running", action="store_true", help="keep the virtual clusters up at the end")
    p.set_defaults(func=cmd_demo)
