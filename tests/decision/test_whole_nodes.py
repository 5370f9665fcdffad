"""The `whole_nodes` score: keep nodes coming free whole, for gangs that need all of one."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_mcsched.decision import Policy, ScoreWeights
from tests.decision.fleet_factory import cluster, decide_one, observe, pool, request, reservation, view_of

HOUR = timedelta(hours=1)


def one_node(ours_gpus=0, ours_end=HOUR, others_gpus=0):
    """One 8-GPU node: `ours_gpus` held by a reservation of ours ending in `ours_end`, `others_gpus` by
    pods of others (no known end)."""
    profile = cluster("a", pool("gpu", nodes=1, gpu_sharing=True))
    running = [reservation("run", "a", "gpu", "a-gpu-0", gpus=ours_gpus, ends_in=ours_end)] if ours_gpus else []
    obs = observe(profile, free={"gpu": [8 - ours_gpus - others_gpus]}, seen=[r.id for r in running])
    return view_of((profile, obs)), running


@pytest.mark.parametrize(
    ("node", "ask", "value"),
    [
        ({}, {"gpus": 1}, 1 - 7 / 8),  # opens an empty node for the whole hour, 7 GPUs stranded
        ({}, {"gpus": 8}, 1.0),  # fills the node: nothing stranded
        ({}, {"gpus": 1, "gpu_milli": 500, "expected_duration": 2 * HOUR}, 1 - 7.5 / 8),
        ({"ours_gpus": 4, "ours_end": 3 * HOUR}, {"gpus": 1}, 1.0),  # ends before the node's work does
        ({"ours_gpus": 4, "ours_end": HOUR / 2}, {"gpus": 1}, 1 - 0.5 * 7 / 8),  # keeps it busy 30 min more
        ({"others_gpus": 4}, {"gpus": 1}, 1.0),  # others' pods of unknown end: not coming free anyway
    ],
)
def test_value_is_the_share_of_a_large_node_kept_from_coming_free(node, ask, value):
    view, running = one_node(**node)
    ask = {"expected_duration": HOUR, **ask}
    decision = decide_one(view, request(**ask), running)
    assert decision.placement.part("whole_nodes").value == pytest.approx(value)


def test_a_node_is_weighed_against_the_fleets_largest():
    """One GPU on an empty 2-GPU node strands 1 of the 8 GPUs a gang could need elsewhere."""
    view = view_of(cluster("a", pool("big", nodes=1), pool("small", gpus_per_node=2, nodes=1, price_per_gpu_hour=9.0)))
    decision = decide_one(view, request(gpus=1, expected_duration=HOUR), policy=Policy(weights={"price": 0}))
    assert decision.pool == "small"
    assert decision.placement.part("whole_nodes").value == pytest.approx(1 - 1 / 8)


@pytest.mark.parametrize(("weight", "expected_pool"), [(1.0, "dear"), (0.0, "cheap")])
def test_a_small_pod_fills_a_busy_node_of_a_dearer_pool_rather_than_open_an_empty_one(weight, expected_pool):
    """cheap: an empty 8-GPU node at 1.0; dear: an 8-GPU node with 6 GPUs ours for 5 more hours, at 1.3."""
    profile = cluster(
        "a", pool("cheap", nodes=1, price_per_gpu_hour=1.0), pool("dear", nodes=1, price_per_gpu_hour=1.3)
    )
    running = [reservation("run", "a", "dear", "a-dear-0", gpus=6, ends_in=5 * HOUR)]
    obs = observe(profile, free={"cheap": [8], "dear": [2]}, seen=["rsv-run"])
    policy = Policy(weights=ScoreWeights(whole_nodes=weight))
    decision = decide_one(view_of((profile, obs)), request(gpus=1, expected_duration=HOUR), running, policy)
    assert decision.pool == expected_pool
