"""Small DAGs for the end-to-end tests, each one step that asks for GPUs and names no cluster.

The pods run on the virtual clusters' timed runtime (no command: they sleep for the annotated
duration), so the tests control how long capacity is held.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_mcsched.operators.multi_cluster_pod import MultiClusterPodOperator

H100 = "NVIDIA-H100-80GB-HBM3"
A100 = "NVIDIA-A100-SXM4-80GB"


def one_step_dag(dag_id: str, seconds: int, retries: int = 0, **needs) -> DAG:
    with DAG(
        dag_id,
        start_date=datetime(2026, 1, 1),
        schedule=None,
        catchup=False,
        tags=["team:e2e", "project:tests"],
        default_args={"retries": retries, "retry_delay": timedelta(seconds=2)},
    ) as dag:
        MultiClusterPodOperator(
            task_id="step",
            name=dag_id.replace("_", "-"),
            image="trainer:latest",
            annotations={"mcsched.io/duration-seconds": str(seconds), "mcsched.io/runtime": "timed"},
            placement_poll_interval=1,
            startup_check_interval_seconds=1,
            poll_interval=1,
            **needs,
        )
    return dag


hold_h100 = one_step_dag("e2e_hold_h100", 12, kind="training", gpus=8, gpu_types=[H100])
low_h100 = one_step_dag("e2e_low_h100", 1, kind="training", gpus=8, gpu_types=[H100], priority_class="low")
high_h100 = one_step_dag("e2e_high_h100", 1, kind="training", gpus=8, gpu_types=[H100], priority_class="high")
node_lost = one_step_dag("e2e_node_lost", 20, retries=1, kind="training", gpus=8, gpu_types=[A100, H100])
