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
from pathlib import Path
from urllib.parse import quote

from airflow_mcsched.cli.table import render_table

REPO = Path(__file__).resolve().parents[2]
DEFAULT_FLEET = REPO / "examples" / "fleet.yaml"
DEMO_DAG = "retraining_pipeline"


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


def _show_placements(placements: list[dict]) -> None:
    for p in placements:
        task, exp = p["task"], p.get("explanation") or {}
        where = f"{p['cluster']}/{p['pool']} on {', '.join(p['nodes'])}" if p["cluster"] else "nowhere yet"
        print(
            f"\n- {task['task_id']} (try {task['try_number']}, attempt {p['attempt']}): {p['state'].upper()} -> {where}"
        )
        chosen = exp.get("chosen")
        if chosen:
            parts = ", ".join(f"{x['name']} {x['value']:.2f}x{x['weight']:g}" for x in chosen["parts"])
            print(f"    price {chosen['price_per_gpu_hour']:.2f}/GPU-h, score {chosen['score']:.3f} = {parts}")
        for r in exp.get("runners_up", [])[:2]:
            price = r["price_per_gpu_hour"]
            print(f"    runner-up {r['cluster']}/{r['pool']} score {r['score']:.3f} at {price:.2f}/GPU-h")
        for r in exp.get("rejections", []):
            where = r["cluster"] if r["pool"] is None else f"{r['cluster']}/{r['pool']}"
            print(f"    not {where}: {r['reason']}: {r['message']}")
        if p.get("gpu_hours") is not None:
            print(f"    {p['gpu_hours']:.6f} GPU-hours, cost {p['cost']:.6f} ({p['end_reason']})")


def _show_cost_per_team(placements: list[dict]) -> None:
    totals: dict[tuple[str, str], list[float]] = {}
    for p in placements:
        key = (p["team"], p["project"] or "-")
        t = totals.setdefault(key, [0.0, 0.0, 0])
        t[0] += p.get("gpu_hours") or 0.0
        t[1] += p.get("cost") or 0.0
        t[2] += 1
    rows = [[team, project, n, f"{gh:.4f}", f"{cost:.4f}"] for (team, project), (gh, cost, n) in sorted(totals.items())]
    print(render_table(["TEAM", "PROJECT", "PLACEMENTS", "GPU-HOURS", "COST"], rows))


def _wait_for_capacity(stack, clusters: int, timeout: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = stack.api("GET", "/mcsched/api/v1/clusters")["clusters"]
        if len(listed) == clusters and all(c["status"] and c["status"]["healthy"] for c in listed):
            return
        time.sleep(1)
    raise TimeoutError("the API server did not read every cluster's capacity in time")


def cmd_demo(args: argparse.Namespace) -> int:
    home = Path(args.home).resolve()
    airflow_home = prepare_airflow_home(home)
    _step(f"Airflow home {airflow_home} (SQLite); `airflow db migrate` creates Airflow's and our tables")
    _migrate()

    from airflow.utils.session import create_session

    from airflow_mcsched.access.fleet_file import load_fleet_file
    from airflow_mcsched.cli.airflow_stack import AirflowStack
    from airflow_mcsched.service.cluster_store import ClusterStore
    from airflow_mcsched.service.view_loader import load_view
    from airflow_mcsched.virtual.fleet import VirtualFleet

    spec = load_fleet_file(args.fleet)
    _step(f"Starting {len(spec.clusters)} virtual Kubernetes clusters from {args.fleet} (local API servers)")
    state_dir = home / "virtual-clusters"
    with VirtualFleet.start(spec, mode="process", state_dir=state_dir) as fleet:
        for handle in fleet:
            print(f"  {handle.name:14} {handle.url}  (Airflow connection {handle.conn_id})")
        print(f"  kubeconfigs and Airflow connections written to {state_dir}")

        _step("Their nodes, read through the kubernetes client")
        _show_nodes(fleet)

        _step("Recording the cluster profiles in the Airflow metadata DB (`mcsched clusters apply`)")
        with create_session() as session:
            print(ClusterStore(session).apply(spec, "demo").describe())

        password = _demo_password(home)
        stack = AirflowStack(
            airflow_home,
            os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"],
            REPO / "dags_examples",
            os.environ["AIRFLOW__API_AUTH__JWT_SECRET"],
            extra_env=fleet.connection_env(),
            admin_password=password,
            port=args.port,
        )
        _step("Starting Airflow: api-server (with the placement service), scheduler, dag-processor, triggerer")
        with stack:
            print(f"  Airflow UI {stack.url}  login admin / {password}  (logs in {airflow_home / 'logs'})")
            _wait_for_capacity(stack, len(spec.clusters))

            _step("The global view the API server keeps from live capacity reads")
            with create_session() as session:
                _show_view(load_view(session))

            _step("Running the retraining pipeline (prepare -> train -> evaluate -> batch inference)")
            stack.wait_for_dag(DEMO_DAG)
            run_id = stack.scheduled_run(DEMO_DAG)
            seen: dict[str, str] = {}

            def progress(_run: dict) -> None:
                for task, state in stack.task_states(DEMO_DAG, run_id).items():
                    if state and seen.get(task) != state:
                        seen[task] = state
                        print(f"  {task:16} {state}")

            state = stack.wait_for_run(DEMO_DAG, run_id, timeout=args.timeout, on_poll=progress)
            print(f"  run {run_id}: {state.upper()}")

            placements = stack.api("GET", f"/mcsched/api/v1/placements?dag_id={DEMO_DAG}&run_id={quote(run_id)}")
            _step("Where each step ran and why (placement lineage with the engine's explanation)")
            _show_placements(placements["placements"])
            _step("Cost per team and project (GPU-hours x the price of the pool each step ran on)")
            _show_cost_per_team(placements["placements"])

            if args.keep_running:
                print(f"\nAll keeps running: Airflow UI {stack.url} (admin / {password}); Ctrl-C stops everything.")
                _block_until_interrupted()
    print("\nDemo done; Airflow and the virtual clusters are stopped.")
    return 0 if state == "success" else 1


def _demo_password(home: Path) -> str:
    path = home / "admin_password"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(12))
        path.chmod(0o600)
    return path.read_text().strip()


def _block_until_interrupted() -> None:
    import time

    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the demo on virtual clusters with SQLite")
    p.add_argument("--fleet", default=str(DEFAULT_FLEET), help="fleet file (default: the example fleet)")
    p.add_argument("--home", default=".mcsched", help="where the demo keeps its Airflow home and state")
    p.add_argument("--keep-running", action="store_true", help="keep Airflow and the clusters up at the end")
    p.add_argument("--port", type=int, default=28080, help="Airflow API server / UI port")
    p.add_argument("--timeout", type=float, default=600, help="seconds the DAG run may take")
    p.set_defaults(func=cmd_demo)
