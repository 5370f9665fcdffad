"""Benchmark: what placement adds to a step, against a plain KubernetesPodOperator on the same cluster.

A real deployment (API server with the placement service, scheduler, DAG processor, triggerer;
SQLite) and the example fleet as virtual clusters. Two one-step DAGs run the same 1-second timed
pod on onprem-a100: one with `KubernetesPodOperator(kubernetes_conn_id=...)`, one with
`MultiClusterPodOperator` asking for what only that cluster offers. Each is run N times in turn;
the task instances' durations (from Airflow's API) are compared.

    .venv/bin/python benchmarks/bench_operator_overhead.py [--runs 8]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import textwrap
from datetime import datetime
from pathlib import Path

DAGS = textwrap.dedent(
    """
    from datetime import datetime
    from airflow.sdk import DAG
    from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
    from airflow_mcsched.operators.multi_cluster_pod import MultiClusterPodOperator

    POD = dict(image="trainer:latest", annotations={"mcsched.io/duration-seconds": "1", "mcsched.io/runtime": "timed"},
               startup_check_interval_seconds=1, poll_interval=1, get_logs=True)

    with DAG("bench_plain_kpo", start_date=datetime(2026, 1, 1), schedule=None, tags=["team:bench"]) as plain:
        KubernetesPodOperator(task_id="step", name="plain", kubernetes_conn_id="mcsched_onprem_a100",
                              container_resources={"limits": {"nvidia.com/gpu": "1"}},
                              node_selector={"mcsched.io/node-pool": "a100-ib"}, **POD)

    with DAG("bench_placed", start_date=datetime(2026, 1, 1), schedule=None, tags=["team:bench"]) as placed:
        MultiClusterPodOperator(task_id="step", name="placed", kind="training", gpus=1,
                                gpu_types=["NVIDIA-A100-SXM4-80GB"], placement_poll_interval=0.5, **POD)
    """
)


def task_seconds(stack, dag_id: str, run_id: str) -> float:
    ti = stack.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/step")
    start, end = (datetime.fromisoformat(ti[k]) for k in ("start_date", "end_date"))
    return (end - start).total_seconds()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args(argv)

    from airflow_mcsched.access.fleet_file import load_fleet_file
    from airflow_mcsched.cli.airflow_stack import AirflowStack
    from airflow_mcsched.virtual.fleet import VirtualFleet

    repo = Path(__file__).resolve().parents[1]
    fleet_file = repo / "examples" / "fleet.yaml"
    with tempfile.TemporaryDirectory(prefix="mcsched-bench-") as tmp:
        home = Path(tmp)
        (home / "dags").mkdir()
        (home / "dags" / "bench_dags.py").write_text(DAGS)
        with VirtualFleet.start(load_fleet_file(fleet_file), mode="process") as fleet:
            stack = AirflowStack(home, f"sqlite:///{home / 'airflow.db'}", home / "dags", "bench-" + "b" * 64,
                                 extra_env=fleet.connection_env())  # fmt: skip
            with stack:
                import subprocess
                import sys

                cli = str(Path(sys.executable).with_name("mcsched"))
                env = stack.env()
                subprocess.run([cli, "clusters", "apply", "-f", str(fleet_file)], env=env, check=True,
                               capture_output=True)  # fmt: skip
                times: dict[str, list[float]] = {"bench_plain_kpo": [], "bench_placed": []}
                for dag_id in times:
                    stack.wait_for_dag(dag_id)
                for _ in range(args.runs):
                    for dag_id, seconds in times.items():
                        run_id = stack.trigger(dag_id)
                        state = stack.wait_for_run(dag_id, run_id, timeout=120)
                        if state != "success":
                            raise RuntimeError(f"{dag_id} {run_id}: {state}")
                        seconds.append(task_seconds(stack, dag_id, run_id))
    plain, placed = times["bench_plain_kpo"], times["bench_placed"]
    print(f"runs: {args.runs} of each, a 1 s timed pod on onprem-a100 (virtual), LocalExecutor, SQLite, 2 cores")
    print(f"plain KubernetesPodOperator task: median {statistics.median(plain):.2f}s "
          f"(min {min(plain):.2f}, max {max(plain):.2f})")  # fmt: skip
    print(f"MultiClusterPodOperator task:     median {statistics.median(placed):.2f}s "
          f"(min {min(placed):.2f}, max {max(placed):.2f})")  # fmt: skip
    overhead = statistics.median(placed) - statistics.median(plain)
    print(f"placement overhead per step (median difference): {overhead:.2f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
