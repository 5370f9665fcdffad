"""Oversized and nonsense placement requests are refused at the edge (422 naming the field, or 413
for a huge body) and write nothing; asks that are sane but unplaceable wait with a reason."""

from __future__ import annotations

import pytest

from tests.reliability.api_state import API, bearer, row_counts, seed_fleet_and_placement, valid_submit
from tests.service.conftest import wipe_our_tables


@pytest.fixture
def admin(api_client, user_tokens) -> dict[str, str]:
    """The example fleet and one queued placement (so a refusal has rows it must leave alone)."""
    wipe_our_tables()
    seed_fleet_and_placement(api_client, user_tokens["admin"])
    yield bearer(user_tokens["admin"])
    wipe_our_tables()


def _with(body: dict, path: str, value) -> dict:
    *parents, last = path.split(".")
    node = body
    for key in parents:
        node = node[key]
    node[last] = value
    return body


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("ask.gpus", 10_000),
        ("ask.gpus", -1),
        ("ask.pods", 1_000_000),
        ("ask.pods", 0),
        ("ask.memory_gib", 1e12),
        ("ask.memory_gib", 0),
        ("ask.cpu", 1e9),
        ("ask.gpu_milli", 5000),
        ("ask.kind", "mining"),
        ("ask.expected_duration_seconds", -5),
        ("ask.max_cost_per_hour", 0),
        ("ask.team", "t" * 500),
        ("ask.priority_class", "p" * 100),
        ("ask.gpu_types", [f"GPU-{i}" for i in range(500)]),
        ("ask.data", [{"location": "s3://x", "size_gib": -1}]),
        ("ask.deadline", "2030-01-01T00:00:00"),  # no time zone: ambiguous, was a 500
        ("task.dag_id", "d" * 300),
        ("task.map_index", 2**40),
        ("task.map_index", -7),
        ("attempt", 0),
    ],
)
def test_nonsense_is_refused_naming_the_field_and_writes_nothing(api_client, admin, path, value):
    before = row_counts()
    r = api_client.post(f"{API}/placements", json=_with(valid_submit(), path, value), headers=admin)
    assert r.status_code == 422, r.text
    locations = [".".join(str(p) for p in d["loc"]) for d in r.json()["detail"]]
    assert any(loc.startswith(f"body.{path}") for loc in locations), locations
    assert row_counts() == before


@pytest.mark.parametrize(
    ("ask", "field"),
    [
        ({"gpus": 2, "gpu_milli": 300}, "ask"),  # a share and whole GPUs at once
        ({"gpus": 0, "gpu_types": ["NVIDIA-A100-SXM4-80GB"]}, "ask"),  # a GPU type but no GPUs
        ({"failure_domains": ["eu-1"], "avoid_failure_domains": ["eu-1"]}, "ask"),
        ({"team": None}, "team"),
    ],
)
def test_contradictions_between_fields_are_refused_the_same_way(api_client, admin, ask, field):
    before = row_counts()
    r = api_client.post(f"{API}/placements", json=valid_submit(**ask), headers=admin)
    assert r.status_code == 422, r.text
    problem = r.json()["detail"][0]
    assert problem["loc"][:2] == ["body", "ask"] and field in problem["loc"], problem
    assert problem["msg"]
    assert row_counts() == before


def test_unknown_gpu_type_waits_with_no_matching_gpu_type(api_client, admin):
    """A type no cluster has today is not nonsense (the fleet may grow): it queues and says why it waits."""
    r = api_client.post(f"{API}/placements", json=valid_submit("tpu", gpu_types=["Google-TPU-v9"]), headers=admin)
    assert r.status_code == 201, r.text
    placement = r.json()
    assert placement["state"] == "pending"
    assert {rej["reason"] for rej in placement["explanation"]["rejections"]} == {"NoMatchingGpuType"}


def test_more_gpus_than_any_node_has_waits_rather_than_being_refused(api_client, admin):
    r = api_client.post(f"{API}/placements", json=valid_submit("wide", gpus=64), headers=admin)
    assert r.status_code == 201, r.text
    assert r.json()["state"] == "pending"


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_huge_body_is_refused_before_it_is_parsed(api_client, admin, chunked):
    body = b'{"task": {"dag_id": "d", "run_id": "r", "task_id": "t"}, "ask": {"team": "' + b"x" * 2_000_000 + b'"}}'
    before = row_counts()
    content = iter([body[i : i + 65536] for i in range(0, len(body), 65536)]) if chunked else body
    headers = {**admin, "Content-Type": "application/json"}
    r = api_client.post(f"{API}/placements", content=content, headers=headers)
    assert r.status_code == 413, r.text[:300]
    assert "larger than" in r.json()["detail"]
    assert row_counts() == before


@pytest.mark.parametrize(
    ("path", "field", "value"),
    [
        ("audit", "cursor", str(2**70)),  # was a 500: too large for the id column
        ("audit", "cursor", "²"),  # was a 500: a digit to str.isdigit(), not to int()
        ("reports/cost", "since", "99999999999d"),  # was a 500: before year 1
        ("reports/utilisation", "since", "0001-01-01T00:00:00+01:00"),  # was a 500: year 0 in UTC
        ("reports/waiting", "until", "0001-01-02"),  # was a 500: no room for the default window
    ],
)
def test_query_values_out_of_range_are_422_naming_the_parameter(api_client, admin, path, field, value):
    r = api_client.get(f"{API}/{path}", params={field: value}, headers=admin)
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"] == ["query", field]


@pytest.mark.parametrize(
    ("method", "url", "body", "loc"),
    [
        ("POST", "placements", _with(valid_submit(), "task.dag_id", "d\x00"), ["body", "task", "dag_id"]),
        ("POST", "placements", _with(valid_submit(), "ask.gpu_types", ["A\x00"]), ["body", "ask", "gpu_types", 0]),
        (
            "POST",
            "placements",
            _with(valid_submit(), "dag_params", {"team\x00": "ml"}),
            ["body", "dag_params", "team\x00"],
        ),
        ("GET", "placements/p%00", None, ["path"]),
        ("GET", "placements?team=ml%00", None, ["query", "team"]),
        ("GET", "audit?actor=%00", None, ["query", "actor"]),
        ("GET", "clusters/cloud-h100%00", None, ["path"]),
    ],
)
def test_a_nul_character_is_refused_naming_where_it_is(api_client, admin, method, url, body, loc):
    """PostgreSQL cannot store or compare text with NUL (it was a 500 there, accepted by SQLite)."""
    before = row_counts()
    r = api_client.request(method, f"{API}/{url}", json=body, headers=admin)
    assert r.status_code == 422, r.text
    assert r.json()["detail"] == [
        {"loc": loc, "msg": "text must not contain NUL characters (\\u0000)", "type": "value_error"}
    ]
    assert row_counts() == before


def test_a_backslash_before_u0000_is_text_not_a_nul(api_client, admin):
    r = api_client.post(f"{API}/placements", json=valid_submit("slash\\u0000"), headers=admin)
    assert r.status_code == 201, r.text
    assert r.json()["task"]["task_id"] == "slash\\u0000"
