"""Admission order: priority class, then the team's use against its share, then arrival."""

from __future__ import annotations

from datetime import timedelta

from airflow_mcsched.decision import Outcome, Policy, Reason, decide
from tests.decision.fleet_factory import DEFAULT_POLICY, NOW, cluster, pool, request, reservation, view_of

ONE_NODE = cluster("a", pool(nodes=1))


def order(result):
    return [d.request_id for d in result.decisions]


def test_higher_priority_class_goes_first_whatever_its_arrival():
    queue = [
        request("early-low", gpus=8, priority_class="low", arrival=NOW - timedelta(hours=2)),
        request("late-high", gpus=8, priority_class="high", arrival=NOW - timedelta(minutes=1)),
    ]
    result = decide(view_of(ONE_NODE), queue, [], DEFAULT_POLICY, NOW)
    assert order(result) == ["late-high", "early-low"]
    assert result.decision("late-high").outcome is Outcome.ADMITTED


def test_same_priority_goes_by_arrival():
    queue = [
        request("second", gpus=1, arrival=NOW - timedelta(minutes=1)),
        request("first", gpus=1, arrival=NOW - timedelta(minutes=2)),
    ]
    assert order(decide(view_of(ONE_NODE), queue, [], DEFAULT_POLICY, NOW)) == ["first", "second"]


def test_team_furthest_below_its_share_goes_first():
    """Team busy already holds 4 GPUs; team idle holds none: idle's later request goes first."""
    running = [reservation("held", "a", "gpu", "a-gpu-0", gpus=4, team="busy")]
    queue = [
        request("busy-1", team="busy", gpus=1, arrival=NOW - timedelta(minutes=5)),
        request("idle-1", team="idle", gpus=1, arrival=NOW - timedelta(minutes=1)),
    ]
    assert order(decide(view_of(ONE_NODE), queue, running, DEFAULT_POLICY, NOW)) == ["idle-1", "busy-1"]


def test_teams_take_turns_as_grants_raise_their_use():
    queue = [request(f"a{i}", team="a", gpus=1, arrival=NOW - timedelta(minutes=10 - i)) for i in range(3)]
    queue += [request(f"b{i}", team="b", gpus=1, arrival=NOW - timedelta(minutes=5 - i)) for i in range(3)]
    assert order(decide(view_of(ONE_NODE), queue, [], DEFAULT_POLICY, NOW)) == ["a0", "b0", "a1", "b1", "a2", "b2"]


def test_share_is_the_teams_nominal_quota():
    """a has a share of 8 and uses 4 (half); b has a share of 2 and uses 2 (all): a goes first."""
    policy = Policy(quotas=[{"team": "a", "nominal": {"A100": 8}}, {"team": "b", "nominal": {"A100": 2}}])
    running = [
        reservation("ra", "a", "gpu", "a-gpu-0", gpus=4, team="a"),
        reservation("rb", "a", "gpu", "a-gpu-0", gpus=2, team="b"),
    ]
    queue = [request("b1", team="b", gpus=1, arrival=NOW - timedelta(hours=1)), request("a1", team="a", gpus=1)]
    assert order(decide(view_of(ONE_NODE), queue, running, policy, NOW)) == ["a1", "b1"]


def test_unknown_priority_class_waits_last_and_says_why():
    queue = [request("odd", gpus=1, priority_class="urgent"), request("ok", gpus=1)]
    result = decide(view_of(ONE_NODE), queue, [], DEFAULT_POLICY, NOW)
    assert order(result) == ["ok", "odd"]
    odd = result.decision("odd")
    assert (odd.outcome, odd.reason) == (Outcome.WAITING, Reason.UNKNOWN_PRIORITY_CLASS)
    assert "'urgent'" in odd.summary


def test_same_inputs_same_decisions():
    queue = [request(f"r{i}", team=f"t{i % 3}", gpus=1 + i % 4) for i in range(12)]
    view = view_of(cluster("a", pool(nodes=2)), cluster("b", pool(nodes=1, price_per_gpu_hour=1.5)))
    assert decide(view, queue, [], DEFAULT_POLICY, NOW) == decide(view, queue, [], DEFAULT_POLICY, NOW)
