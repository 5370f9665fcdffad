"""Aging: a request that has waited longer than `aging_seconds` goes ahead of its priority class."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_mcsched.decision import Policy, decide
from tests.decision.fleet_factory import NOW, cluster, pool, request, reservation, view_of

ONE_NODE = cluster("a", pool(nodes=1))
QUOTAS = [{"team": "a", "nominal": {"A100": 8}}, {"team": "b", "nominal": {"A100": 2}}]


def order(result):
    return [d.request_id for d in result.decisions]


@pytest.mark.parametrize(
    ("aging_seconds", "expected"),
    [
        (None, ["a1", "b1"]),  # never aged: team a is further below its share
        (7200, ["a1", "b1"]),  # b1 has waited an hour, not two
        (1800, ["b1", "a1"]),  # b1 has waited past half an hour: it goes first
    ],
)
def test_a_long_wait_goes_ahead_of_the_fair_share_order(aging_seconds, expected):
    """a has a share of 8 and uses 4 (half); b has a share of 2 and uses 2 (all)."""
    policy = Policy(quotas=QUOTAS, aging_seconds=aging_seconds)
    running = [
        reservation("ra", "a", "gpu", "a-gpu-0", gpus=4, team="a"),
        reservation("rb", "a", "gpu", "a-gpu-0", gpus=2, team="b"),
    ]
    queue = [request("b1", team="b", gpus=1, arrival=NOW - timedelta(hours=1)), request("a1", team="a", gpus=1)]
    assert order(decide(view_of(ONE_NODE), queue, running, policy, NOW)) == expected


@pytest.mark.parametrize(
    ("aging_seconds", "expected"),
    [
        (None, ["z", "y", "x"]),  # least use first: z holds nothing, y 2 GPUs, x 4
        (1800, ["y", "x", "z"]),  # y (50 min) and x (40 min) are aged: oldest first, whatever their use
    ],
)
def test_aged_requests_go_oldest_first_whatever_their_teams_use(aging_seconds, expected):
    running = [
        reservation("rx", "a", "gpu", "a-gpu-0", gpus=4, team="x"),
        reservation("ry", "a", "gpu", "a-gpu-0", gpus=2, team="y"),
    ]
    waits = {"x": 40, "y": 50, "z": 1}
    queue = [request(r, team=r, gpus=1, arrival=NOW - timedelta(minutes=m)) for r, m in waits.items()]
    result = decide(view_of(ONE_NODE), queue, running, Policy(aging_seconds=aging_seconds), NOW)
    assert order(result) == expected


def test_aging_never_passes_a_higher_priority_class():
    queue = [
        request("old-low", gpus=1, team="t1", priority_class="low", arrival=NOW - timedelta(hours=5)),
        request("new-normal", gpus=1, team="t2", arrival=NOW - timedelta(minutes=1)),
    ]
    result = decide(view_of(ONE_NODE), queue, [], Policy(aging_seconds=60), NOW)
    assert order(result) == ["new-normal", "old-low"]
