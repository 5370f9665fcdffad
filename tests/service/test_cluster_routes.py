"""The cluster endpoints of the placement service, mounted in Airflow's real API server app."""

from __future__ import annotations

from pathlib import Path

from airflow_mcsched.access.fleet_file import load_fleet_file
from airflow_mcsched.service.cluster_store import ClusterStore

FLEET = Path(__file__).resolve().parents[2] / "examples" / "fleet.yaml"


def _apply_example_fleet() -> None:
    from airflow.utils.session import create_session

    with create_session() as session:
        ClusterStore(session).apply(load_fleet_file(FLEET), "test")


def test_cluster_list_needs_a_login(api_client):
    assert api_client.get("/mcsched/api/v1/clusters").status_code == 401
    r = api_client.get("/mcsched/api/v1/clusters", headers={"Authorization": "Bearer not-a-token"})
    assert r.status_code in (401, 403)


def test_cluster_list_with_bearer_token_and_with_ui_cookie(api_client, user_tokens):
    _apply_example_fleet()
    r = api_client.get("/mcsched/api/v1/clusters", headers={"Authorization": f"Bearer {user_tokens['viewer']}"})
    assert r.status_code == 200, r.text
    names = {c["profile"]["name"] for c in r.json()["clusters"]}
    assert names >= {"onprem-a100", "cloud-h100", "baremetal-t4"}
    api_client.cookies.set("_token", user_tokens["admin"])
    try:
        assert api_client.get("/mcsched/api/v1/clusters/cloud-h100").json()["profile"]["kind"] == "cloud"
    finally:
        api_client.cookies.clear()


def test_unknown_cluster_is_404_with_a_hint(api_client, user_tokens):
    r = api_client.get("/mcsched/api/v1/clusters/nope", headers={"Authorization": f"Bearer {user_tokens['admin']}"})
    assert r.status_code == 404
    assert "mcsched clusters list" in r.json()["detail"]


def test_openapi_schema_is_served(api_client, user_tokens):
    r = api_client.get("/mcsched/openapi.json")
    assert r.status_code == 200
    assert "/api/v1/clusters" in r.json()["paths"]
