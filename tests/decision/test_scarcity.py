"""The `scarcity` score: work that could run on several GPU types leaves the rare ones to work that cannot."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_mcsched.decision import Outcome, Policy, ScoreWeights, decide
from airflow_mcsched.decision.scores.scarcity import SCARCE_BELOW
from tests.decision.fleet_factory import NOW, cluster, decide_one, pool, request, view_of

LONG = timedelta(days=100)


def fleet():
    """One 1-GPU A10 node (the fleet's only A10) beside ten empty 8-GPU G2 nodes at a lower price."""
    return view_of(
        cluster(
            "a",
            pool("a10", "A10", gpus_per_node=1, nodes=1, price_per_gpu_hour=1.1),
            pool("g2", "G2", gpus_per_node=8, nodes=10, price_per_gpu_hour=0.9),
        )
    )


@pytest.mark.parametrize(
    ("ask", "pool_name", "value"),
    [
        ({"gpus": 1}, "g2", 1.0),  # 80 G2 GPUs: at least 16 times one GPU
        ({"gpus": 8}, "g2", 80 / (SCARCE_BELOW * 8)),  # an 8-GPU pod: 80 is not 16 times 8
        ({"gpus": 1, "gpu_types": ("A10", "G2")}, "g2", 1.0),  # two types named: still a choice
    ],
)
def test_value_is_the_fleets_gpus_of_the_type_against_what_the_request_takes(ask, pool_name, value):
    decision = decide_one(fleet(), request(expected_duration=LONG, **ask))
    assert decision.pool == pool_name
    assert decision.placement.part("scarcity").value == pytest.approx(value)


def test_a_flexible_long_pod_leaves_the_only_a10_to_work_that_needs_it():
    """`whole_nodes` and `fragmentation` like the exactly filled 1-GPU node; scarcity outweighs them.
    (The shipped policy also weighs this 2,400-GPU-hour job's price more, which points the same way:
    the check without scarcity leaves the price at its plain weight, so only scarcity is taken away.)"""
    view = fleet()
    flexible = request("any", gpus=1, expected_duration=LONG)
    assert decide_one(view, flexible).pool == "g2"
    plain_price = Policy(weights=ScoreWeights(scarcity=0), dollars_at_stake_gpu_hours=None)
    assert decide_one(view, flexible, policy=Policy(dollars_at_stake_gpu_hours=None)).pool == "g2"
    without = decide_one(view, flexible, policy=plain_price)
    assert without.pool == "a10"
    result = decide(view, [flexible, request("needs-a10", gpus=1, gpu_types=("A10",))], [], Policy(), NOW)
    assert [d.outcome for d in result.decisions] == [Outcome.ADMITTED, Outcome.ADMITTED]
    assert [d.pool for d in result.decisions] == ["g2", "a10"]


@pytest.mark.parametrize("ask", [{"gpus": 1, "gpu_types": ("A10",)}, {"cpu": 4}])
def test_work_without_a_choice_of_gpu_type_is_not_scored(ask):
    decision = decide_one(fleet(), request(**ask))
    assert decision.outcome is Outcome.ADMITTED
    assert "scarcity" not in [p.name for p in decision.placement.parts]
