"""The placement hook against the placement service served over real HTTP."""

from __future__ import annotations

import pytest

from airflow_mcsched.hooks.placement import PlacementHook, PlacementServiceError, PlacementServiceUnavailable
from airflow_mcsched.service.task_tokens import TaskIdentity

GHOST = TaskIdentity(ti_id="0190f0f0-0000-7000-8000-000000000000", dag_id="d", run_id="r", task_id="t")


def test_a_token_for_a_task_instance_that_does_not_exist_is_refused(live_api_url):
    with pytest.raises(PlacementServiceError) as err:
        PlacementHook(GHOST, retries=0).list()
    assert err.value.status_code == 403
    assert "no such task instance" in str(err.value)


def test_a_token_signed_with_another_secret_is_refused(live_api_url):
    hook = PlacementHook(GHOST, retries=0, secret_provider=lambda: "not-the-airflow-secret-" + "y" * 64)
    with pytest.raises(PlacementServiceError) as err:
        hook.list()
    assert err.value.status_code == 401


def test_a_person_with_an_airflow_token_can_read_placements(live_api_url, user_tokens):
    listing = PlacementHook(bearer_token=user_tokens["viewer"], retries=0).list(dag_id="nothing-here")
    assert listing.placements == []


def test_an_unreachable_service_is_a_clear_error_after_retries(airflow_db):
    from tests.conftest import free_port

    hook = PlacementHook(GHOST, base_url=f"http://127.0.0.1:{free_port()}/mcsched", retries=2, backoff_seconds=0.01)
    with pytest.raises(PlacementServiceUnavailable, match=r"after 3 tries.*\[mcsched\] service_url"):
        hook.get("x")
