"""When the chosen cluster cannot launch the step, the fault is reported and the step moves on.

The fleet's capacity is read while every cluster is fine; then the cluster the policy picks for
the training step (onprem-a100) breaks in one of three ways before the step launches.
"""

from __future__ import annotations

import pytest

from tests.operators.placement_fleet import active_reservations, placement_rows

FIRST_CHOICE = "onprem-a100"


def api_answers_503(fleet) -> None:
    fleet.cluster(FIRST_CHOICE).set_fault(unavailable=True)


def api_refuses_connections(fleet) -> None:
    fleet.cluster(FIRST_CHOICE).set_fault(refuse_seconds=60)


def gpu_nodes_cordoned(fleet) -> None:
    cluster = fleet.cluster(FIRST_CHOICE)
    for node in ("onprem-a100-a100-ib-0", "onprem-a100-a100-ib-1"):
        cluster.cordon(node)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("break_cluster", "fault", "mode"),
    [
        (api_answers_503, "ClusterApiUnavailable", "sync"),
        (api_refuses_connections, "ClusterApiUnavailable", "sync"),
        (gpu_nodes_cordoned, "PodNotScheduled", "sync"),
        (gpu_nodes_cordoned, "PodNotScheduled", "deferrable"),  # noticed by KPO's trigger, failed over on resume
    ],
    ids=["api-503", "connection-refused", "never-scheduled", "never-scheduled-deferrable"],
)
def test_a_broken_cluster_moves_the_step_to_another_and_the_run_succeeds(placement_fleet, break_cluster, fault, mode):
    dag_id = f"mcsched_failover_{break_cluster.__name__}_{mode}"
    break_cluster(placement_fleet.fleet)

    run = placement_fleet.run("mcsched_train_step.py", dag_id)

    assert run.state == "success"
    first, second = placement_rows(dag_id)
    assert (first.attempt, first.cluster, first.state) == (1, FIRST_CHOICE, "failed")
    assert first.end_reason.startswith(fault)
    assert (second.attempt, second.state) == (2, "released")
    assert second.cluster != first.cluster and second.request["avoid_clusters"] == [FIRST_CHOICE]
    assert second.started_at and second.gpu_hours > 0
    assert not active_reservations()
