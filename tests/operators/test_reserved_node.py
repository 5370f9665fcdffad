"""The pod runs on the node its placement reserved, not where the cluster's scheduler alone would put it."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from tests.operators.placement_fleet import active_reservations, hold_capacity, placement_rows

L4_NODE = {"kind": "batch", "gpus": 4, "gpu_types": ["NVIDIA-L4"], "cpu": 1, "memory_gib": 2}


@pytest.mark.slow
def test_the_step_runs_on_its_reserved_node_where_best_fit_would_pick_the_other(placement_fleet):
    """Another team holds one of the two L4 nodes (its pod has not started), so the engine grants the
    step the other one. In the cluster both nodes stand empty, and its scheduler's best fit, breaking
    the tie by name, would take the held one (which the engine then counts elsewhere, but the held
    work would find its node taken): the pod asks for its own node first."""
    (held,) = hold_capacity(L4_NODE)
    dag_id = "mcsched_reserved_node_deferrable"

    run = placement_fleet.run("mcsched_deferrable_step.py", dag_id)

    assert run.state == "success"
    (row,) = placement_rows(dag_id)
    (held_res,) = active_reservations()
    assert held_res.placement_id == held and row.cluster == held_res.cluster == "cloud-h100"
    step_node, held_node = _reserved_node(row.id), held_res.pods[0]["node"]
    assert held_node < step_node  # by name: the cluster's scheduler alone would take held_node
    api = placement_fleet.fleet.cluster("cloud-h100").core_v1()
    scheduled = [e.message for e in api.list_namespaced_event("default").items if e.reason == "Scheduled"]
    assert len(scheduled) == 1 and scheduled[0].endswith(f" to {step_node}"), scheduled


def _reserved_node(placement_id: str) -> str:
    from airflow.utils.session import create_session

    from airflow_mcsched.service.tables import ReservationRow

    with create_session() as session:
        res = session.scalars(select(ReservationRow).where(ReservationRow.placement_id == placement_id)).one()
        return res.pods[0]["node"]
