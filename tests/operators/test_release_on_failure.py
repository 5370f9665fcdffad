"""However a step ends, its placement ends with it: no reservation outlives the task."""

from __future__ import annotations

import pytest

from tests.operators.placement_fleet import active_reservations, placement_rows


@pytest.mark.slow
def test_a_failing_pod_fails_the_task_and_releases_its_placement(placement_fleet):
    dag_id = "mcsched_failing_pod"
    t4 = placement_fleet.fleet.cluster("baremetal-t4")

    run = placement_fleet.run("mcsched_failing_step.py", dag_id)

    assert run.state == "failed"
    (row,) = placement_rows(dag_id)
    assert (row.cluster, row.state) == ("baremetal-t4", "released")
    assert row.end_reason.startswith("failed: AirflowException: Pod") and "returned a failure" in row.end_reason
    assert row.started_at and row.ended_at and row.gpu_hours > 0
    assert row.cost == pytest.approx(row.gpu_hours * row.price_per_gpu_hour)
    assert not active_reservations()  # the service counts the GPU free again ...
    summary = t4.summary()
    assert summary["gpus_free"] == summary["gpus"] and summary["pods"] == {}  # ... and so does the cluster
