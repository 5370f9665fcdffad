"""A real KubernetesPodOperator task, run with `dag.test()` against a virtual cluster, sync and deferrable.

Each run happens in a fresh Python process: Airflow fixes its log level when first configured,
and the pod's output reaches the task log at INFO while the test session logs at WARNING.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DAG_FILE = Path(__file__).parent / "dags" / "mcsched_virtual_kpo.py"
RUN_DAG = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location(sys.argv[2], sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
run = module.dag.test()
print("DAG RUN STATE:", run.state)
"""


@pytest.fixture
def a100_fleet(fleet_spec):
    from airflow_mcsched.virtual.fleet import VirtualFleet

    with VirtualFleet.start(fleet_spec, only=["onprem-a100"]) as fleet:
        yield fleet


@pytest.mark.slow
@pytest.mark.parametrize("deferrable", [False, True], ids=["sync", "deferrable"])
def test_kubernetes_pod_operator_runs_to_success(airflow_db, a100_fleet, deferrable):
    dag_id = f"mcsched_virtual_kpo_{'deferrable' if deferrable else 'sync'}"
    target = airflow_db / "dags" / f"{dag_id}.py"  # dag.test() needs the DAG inside the dags folder
    shutil.copy(DAG_FILE, target)
    env = {**os.environ, **a100_fleet.connection_env(), "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO"}
    result = subprocess.run(
        [sys.executable, "-c", RUN_DAG, str(target), dag_id], env=env, capture_output=True, text=True, timeout=120
    )
    output = result.stdout + result.stderr
    assert "DAG RUN STATE: success" in output, output[-4000:]
    assert "step 2 loss 0.1353" in output  # the pod's own output, in the task log
    if deferrable:
        assert "Pausing task as DEFERRED" in output

    api = a100_fleet.cluster("onprem-a100").core_v1()
    pods = api.list_namespaced_pod("default", label_selector=f"dag_id={dag_id},kubernetes_pod_operator=True").items
    assert len(pods) == 1  # kept by on_finish_action="keep_pod"
    assert pods[0].status.phase == "Succeeded"
    assert pods[0].spec.node_name.startswith("onprem-a100-a100-ib-")
