"""The policy: loadable from YAML, validated, with per-team and per-kind weight overrides."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_mcsched.access.profiles import WorkKind
from airflow_mcsched.decision import Policy, PolicyError

YAML = """
priority_classes: {low: 0, normal: 100, high: 1000}
default_priority_class: normal
weights: {price: 2.0, data: 1.0}
overrides:
  - kind: inference
    weights: {load: 1.0}
  - team: vision
    weights: {price: 0.5}
  - team: vision
    kind: inference
    weights: {price: 0.1}
quotas:
  - team: vision
    nominal: {A100: 8}
    cohort: research
default_duration_hours: {training: 12}
max_staging_seconds: 600
"""


def test_policy_loads_from_yaml():
    policy = Policy.from_yaml(YAML)
    assert policy.priority_of("high") == 1000
    assert policy.priority_of(None) == 100
    assert policy.priority_of("nope") is None
    assert policy.quotas[0].nominal == {"A100": 8}
    assert policy.max_staging_seconds == 600


@pytest.mark.parametrize(
    ("team", "kind", "price", "load"),
    [
        ("nlp", WorkKind.TRAINING, 2.0, 0.1),
        ("nlp", WorkKind.INFERENCE, 2.0, 1.0),
        ("vision", WorkKind.TRAINING, 0.5, 0.1),
        ("vision", WorkKind.INFERENCE, 0.1, 1.0),
    ],
)
def test_the_most_specific_override_wins(team, kind, price, load):
    weights = Policy.from_yaml(YAML).weights_for(team, kind)
    assert (weights.price, weights.load) == (price, load)


def test_durations_come_from_the_request_else_the_kind_default():
    policy = Policy.from_yaml(YAML)
    assert policy.expected_duration(WorkKind.TRAINING, None) == timedelta(hours=12)
    assert policy.expected_duration(WorkKind.EVAL, None) == timedelta(hours=1)
    assert policy.expected_duration(WorkKind.EVAL, timedelta(minutes=5)) == timedelta(minutes=5)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"default_priority_class": "urgent"}, "not among priority_classes"),
        ({"weights": {"price": -1}}, "weights.price"),
        ({"overrides": [{"weights": {"price": 1}}]}, "needs a team, a kind, or both"),
        ({"overrides": [{"team": "x", "weights": {"prize": 1}}]}, "unknown score weights ['prize']"),
        ({"quotas": [{"team": "a", "nominal": {"A100": 1}}, {"team": "a", "nominal": {}}]}, "merge the entries"),
        ({"quotas": [{"team": "a", "nominal": {"A100": -2}}]}, "must be >= 0"),
        ({"lease_secs": 10}, "unknown field"),
    ],
)
def test_invalid_policies_say_what_to_fix(data, words):
    with pytest.raises(PolicyError) as err:
        Policy.from_dict(data)
    assert words in str(err.value)


def test_bad_yaml_is_a_policy_error():
    with pytest.raises(PolicyError, match="not valid YAML"):
        Policy.from_yaml("weights: [")
