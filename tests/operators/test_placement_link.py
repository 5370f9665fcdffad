"""The task instance's "Placement" button opens the step's placement page inside the Airflow UI."""

from __future__ import annotations

from airflow.models.taskinstancekey import TaskInstanceKey

from airflow_mcsched.operators.links import PlacementLink, placement_url
from airflow_mcsched.operators.multi_cluster_pod import MultiClusterPodOperator
from airflow_mcsched.sensors.placement import PlacementSensor


def test_the_link_opens_the_tasks_placement_page_in_the_airflow_ui(monkeypatch):
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.com/")
    key = TaskInstanceKey(dag_id="retrain", task_id="train", run_id="scheduled__2026-01-05T00:00:00+00:00")

    url = PlacementLink().get_link(MultiClusterPodOperator(task_id="train", gpus=1, image="x"), ti_key=key)

    assert url == (
        "https://airflow.example.com/plugin/mcsched-placements/mcsched/ui/placements/of-task"
        "?dag_id=retrain&run_id=scheduled__2026-01-05T00%3A00%3A00%2B00%3A00&task_id=train&map_index=-1"
    )


def test_without_a_public_base_url_the_link_uses_the_service_url(monkeypatch):
    monkeypatch.delenv("AIRFLOW__API__BASE_URL", raising=False)
    monkeypatch.setenv("AIRFLOW__MCSCHED__SERVICE_URL", "http://api:8080/mcsched")
    assert placement_url("d", "r", "t", 3) == (
        "http://api:8080/plugin/mcsched-placements/mcsched/ui/placements/of-task?dag_id=d&run_id=r&task_id=t&map_index=3"
    )


def test_the_plugin_registers_the_link_and_both_faces_carry_it():
    from airflow_mcsched.plugin import MultiClusterSchedulingPlugin  # imported late: it fixes its apps once

    assert any(isinstance(link, PlacementLink) for link in MultiClusterSchedulingPlugin.operator_extra_links)
    for face in (MultiClusterPodOperator, PlacementSensor):
        assert [type(link) for link in face.operator_extra_links] == [PlacementLink]
