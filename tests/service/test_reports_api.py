"""The report, audit and reclaim endpoints in Airflow's real API server app, on the hand-computed lineage."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_mcsched.governance.report_format import parse_cost_csv
from tests.governance.lineage_cases import DAY, NOW

WINDOW = {"since": DAY.isoformat(), "until": NOW.isoformat()}


@pytest.fixture
def lineage(api_client, airflow_lineage):
    """The hand-computed lineage, served by the in-process API server."""


@pytest.fixture
def get(api_client, user_tokens):
    def call(path: str, **params):
        return api_client.get(
            f"/mcsched/api/v1{path}", params=params, headers={"Authorization": f"Bearer {user_tokens['viewer']}"}
        )

    return call


def test_reports_need_a_login(api_client):
    assert api_client.get("/mcsched/api/v1/reports/cost").status_code == 401


def test_cost_json_per_team_and_project(lineage, get):
    r = get("/reports/cost", group_by="team,project", **WINDOW)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["group_by"] == ["team", "project"] and doc["since"].startswith("2026-01-05T00:00:00")
    assert doc["rows"][0] == {"team": "team-a", "project": "proj-y", "gpu_hours": 2.0, "cost": 8.0, "placements": 1}
    assert doc["total"] == {"gpu_hours": 10.0, "cost": 23.0, "placements": 4}
    only_b = get("/reports/cost", group_by="cluster", team="team-b", **WINDOW).json()
    assert only_b["rows"] == [{"cluster": "c1", "gpu_hours": 4.0, "cost": 8.0, "placements": 1}]


def test_cost_csv_round_trips_to_the_json_rows(lineage, get):
    params = {"group_by": "team,project,gpu_type", **WINDOW}
    csv_response = get("/reports/cost", format="csv", **params)
    assert csv_response.status_code == 200 and csv_response.headers["content-type"].startswith("text/csv")
    assert "attachment" in csv_response.headers["content-disposition"]
    assert csv_response.text.splitlines()[0] == "team,project,gpu_type,gpu_hours,cost,placements"
    assert parse_cost_csv(csv_response.text) == get("/reports/cost", **params).json()["rows"]


def test_cost_series_has_a_value_per_day_and_group(lineage, get):
    doc = get("/reports/cost/series", since=DAY.isoformat(), until=(DAY + timedelta(days=2)).isoformat()).json()
    assert doc["buckets"] == ["2026-01-05", "2026-01-06"]
    by_key = {s["key"]: s["values"] for s in doc["series"]}
    assert by_key["team-a"] == [14.0, 0.0] and by_key["team-b"] == [8.0, 0.0]


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/reports/cost", {"group_by": "team,owner"}, "group_by"),
        ("/reports/cost", {"since": "yesterday"}, "since"),
        ("/reports/cost", {"since": "2026-01-05", "until": "2026-01-01"}, "since"),
        ("/reports/cost", {"format": "xml"}, "format"),
        ("/reports/cost/series", {"bucket": "fortnight"}, "bucket"),
        ("/reports/top", {"n": 0}, "n"),
        ("/reports/top", {"by": "cluster"}, "by"),
        ("/audit", {"cursor": "x"}, "cursor"),
    ],
)
def test_bad_parameters_are_422_naming_the_field(get, path, params, field):
    r = get(path, **params)
    assert r.status_code == 422, r.text
    assert any(d["loc"][-1] == field for d in r.json()["detail"]), r.json()


def test_utilisation_waiting_and_top(lineage, get):
    util = get("/reports/utilisation", **WINDOW).json()
    assert {c["cluster"]: c["used_gpu_hours"] for c in util["clusters"]} == {"c1": 7.0, "c2": 3.0}
    waiting = {t["team"]: t for t in get("/reports/waiting", **WINDOW).json()["teams"]}
    assert waiting["team-a"]["max_seconds"] == 1800.0 and waiting["team-b"]["pending"] == 1
    top = get("/reports/top", by="project", n=1, **WINDOW).json()
    assert top["rows"] == [{"project": "proj-x", "gpu_hours": 7.0, "cost": 14.0, "placements": 2}]


def test_quota_capacity_reclaim_and_audit_answer(lineage, get):
    assert get("/reports/quota").json() == {"quotas": []}  # the default policy has no quotas
    capacity = get("/reports/capacity", forecast_days=3).json()
    assert capacity["clusters"] == [] and capacity["forecast"]["method"] == "seasonal-naive weekly mean"
    assert get("/reclaim").json() == {"reservations": []}
    page = get("/audit", limit=5).json()
    assert page == {"entries": [], "next_cursor": None}


def test_capacity_shows_a_grant_as_reserved_and_its_gpus_as_taken(empty_airflow_tables, get):
    from datetime import UTC, datetime

    from airflow.utils.session import create_session

    from airflow_mcsched.service.cluster_store import ClusterStore
    from airflow_mcsched.service.placement_store import PlacementStore
    from airflow_mcsched.service.policy_source import current_policy
    from airflow_mcsched.service.status_store import StatusStore
    from tests.decision.fleet_factory import observe
    from tests.service.test_placement_store import FLEET, submit

    now = datetime.now(UTC)
    with create_session() as session:
        ClusterStore(session).apply(FLEET, "test")
        for profile in FLEET.clusters:
            StatusStore(session).record(observe(profile, at=now))
        store = PlacementStore(session, current_policy())
        store.submit(submit("train", gpus=8, gpu_types=["NVIDIA-H100-80GB-HBM3"]), "test", now)
        store.run_cycle(now)
    doc = get("/reports/capacity").json()
    clusters = {c["cluster"]: c for c in doc["clusters"]}
    h100 = clusters["cloud-h100"]["gpu_types"][0]
    assert (h100["gpu_type"], h100["gpus"], h100["gpus_free"], h100["gpus_reserved"]) == (
        "NVIDIA-H100-80GB-HBM3", 8, 0, 8.0,
    )  # fmt: skip
    assert h100["gpus_reserved_not_started"] == 8.0 and h100["largest_free_block"] == 0
    assert clusters["onprem-a100"]["flags"] == [] and doc["free_by_gpu_type"]["NVIDIA-A100-SXM4-80GB"] == 16
    audit = get("/audit", action="placement.*").json()["entries"]
    assert [e["action"] for e in audit] == ["placement.admit", "placement.submit"]
