"""Placement requests are validated at the edge, with errors that name the field and the fix."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_mcsched.decision import PlacementRequest, RequestError, parse_request
from tests.decision.fleet_factory import NOW

BASE = {"id": "r1", "arrival": NOW.isoformat(), "team": "ml"}


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ({"gpus": -1}, "gpus", "greater than or equal to 0"),
        ({"gpus": 2, "gpu_milli": 500}, "top level", "either gpus=N whole GPUs or gpu_milli"),
        ({"gpu_types": ["A100"]}, "top level", "set gpus or gpu_milli"),
        ({"deadline": (NOW - timedelta(hours=1)).isoformat()}, "top level", "deadline must be after arrival"),
        ({"expected_duration": 0}, "expected_duration", "must be positive"),
        ({"kind": "training-run"}, "kind", "'training'"),
        ({"gpuz": 1}, "gpuz", "unknown field"),
        ({"failure_domains": ["eu"], "avoid_failure_domains": ["eu"]}, "top level", "both required and avoided"),
        ({"pods": 0}, "pods", "greater than or equal to 1"),
    ],
)
def test_invalid_requests_name_the_field_and_the_fix(extra, field, words):
    with pytest.raises(RequestError) as err:
        parse_request({**BASE, **extra})
    text = str(err.value)
    assert field in text and words in text


def test_missing_fields_are_listed_one_per_line():
    with pytest.raises(RequestError) as err:
        parse_request({"gpus": 1})
    assert {p.split(":")[0] for p in err.value.problems} >= {"id", "arrival", "team"}


@pytest.mark.parametrize(
    ("gpus", "milli", "expected"),
    [(1, 460, (0, 460)), (0, 460, (0, 460)), (8, 1000, (8, 0)), (0, 1000, (1, 0)), (2, 0, (2, 0))],
)
def test_openb_style_shares_are_normalised(gpus, milli, expected):
    r = parse_request({**BASE, "gpus": gpus, "gpu_milli": milli})
    assert (r.gpus, r.gpu_milli) == expected


def test_gang_gpu_equivalent():
    r = PlacementRequest(id="g", arrival=NOW, team="ml", gpus=8, pods=4)
    assert r.gpu_equivalent == 32
    assert PlacementRequest(id="s", arrival=NOW, team="ml", gpu_milli=250, pods=2).gpu_equivalent == 0.5


def test_full_request_round_trips():
    data = {
        **BASE,
        "kind": "training",
        "project": "llm",
        "gpus": 8,
        "pods": 2,
        "gpu_types": ["H100", "A100"],
        "min_gpu_memory_gib": 40,
        "cpu": 32,
        "memory_gib": 256,
        "expected_duration": "PT6H",
        "interruptible": True,
        "priority_class": "high",
        "data": [{"location": "s3://ml-eu/corpus", "size_gib": 500}],
        "needs_rdma": True,
        "needs_fast_storage": True,
        "avoid_clusters": ["onprem-a"],
        "spread_group": "replicas",
        "max_cost_per_hour": 100,
        "deadline": (NOW + timedelta(days=1)).isoformat(),
    }
    r = parse_request(data)
    assert r.expected_duration == timedelta(hours=6)
    assert r.data[0].size_gib == 500
    assert parse_request(r.model_dump(mode="json")) == r
