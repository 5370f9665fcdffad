"""Work that will use many GPU-hours weighs its dollar scores more (`Policy.dollars_at_stake_gpu_hours`):
a month-long job's price is worth more than a tidier fleet, a five-minute job's is not."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_mcsched.access.profiles import WorkKind
from airflow_mcsched.decision import Outcome, Policy, PolicyError, decide
from airflow_mcsched.decision.admission import DEFAULT_PLUGINS, Plugins
from airflow_mcsched.decision.scores import DEFAULT_SCORES, PriceScore
from tests.decision.fleet_factory import NOW, cluster, observe, pool, request, view_of

pytestmark = pytest.mark.usefixtures("fresh_memory")


@pytest.mark.parametrize(
    ("at", "gpu_hours", "level"),
    [
        (None, 10_000.0, 0),  # off
        (24.0, 0.0, 0),  # CPU-only work
        (24.0, 23.9, 0),
        (24.0, 24.0, 1),
        (24.0, 47.9, 1),
        (24.0, 48.0, 2),
        (24.0, 96.0, 3),
        (24.0, 24.0 * 2**6, 7),
        (24.0, 24.0 * 2**20, 7),  # at most MAX_STAKE_LEVEL
        (0.5, 1.0, 2),
    ],
)
def test_stake_level_grows_by_one_per_doubling_past_the_threshold(at, gpu_hours, level):
    assert Policy(dollars_at_stake_gpu_hours=at).stake_level(gpu_hours) == level


def test_only_the_dollar_scores_are_multiplied_and_overrides_still_apply():
    policy = Policy(
        dollars_at_stake_gpu_hours=24,
        overrides=[{"team": "ml", "weights": {"price": 2.0, "fragmentation": 0.5}}],
    )
    assert DEFAULT_PLUGINS.dollar_scores == ("price", "data")  # the scores `in_dollars`
    plain = policy.weights_for("ml", WorkKind.TRAINING)
    staked = plain.staked(2, DEFAULT_PLUGINS.dollar_scores)
    assert (plain.price, plain.data, plain.fragmentation) == (2.0, 1.0, 0.5)
    assert (staked.price, staked.data) == (6.0, 3.0)
    others = set(type(plain).model_fields) - {"price", "data"}
    assert {n: getattr(staked, n) for n in others} == {n: getattr(plain, n) for n in others}
    assert plain.staked(0, DEFAULT_PLUGINS.dollar_scores) is plain


class _PriceNotInDollars(PriceScore):
    in_dollars = False


@pytest.mark.parametrize(("price_score", "weight"), [(PriceScore(), 6.0), (_PriceNotInDollars(), 1.0)])
def test_the_engine_stakes_the_scores_its_plugins_say_are_in_dollars(price_score, weight):
    """A plugin set whose `price` is not in dollars (a custom score) leaves it at its own weight."""
    plugins = Plugins(scores=tuple(price_score if s.name == "price" else s for s in DEFAULT_SCORES))
    r = request(gpus=1, expected_duration=timedelta(hours=500))
    decision = decide(_fleet(), [r], [], Policy(dollars_at_stake_gpu_hours=24), NOW, plugins=plugins).decisions[0]
    assert decision.placement.part("price").weight == weight


def test_a_threshold_that_is_not_positive_is_refused_naming_the_field():
    with pytest.raises(PolicyError, match="dollars_at_stake_gpu_hours"):
        Policy.from_dict({"dollars_at_stake_gpu_hours": 0})


def _fleet():
    """`dear` has one GPU left on a busy node (packing prefers it); `cheap` a whole node free at two
    thirds of the price."""
    dear = cluster("dear", pool("gpu", nodes=1, price_per_gpu_hour=3.0))
    cheap = cluster("cheap", pool("gpu", nodes=1, price_per_gpu_hour=2.0))
    return view_of((dear, observe(dear, free={"gpu": [1]})), (cheap, observe(cheap, free={"gpu": [8]})))


@pytest.mark.parametrize(
    ("hours", "at", "cluster_name", "price_weight"),
    [
        (1, None, "dear", 1.0),  # the packing scores win: fill the busy node, keep the whole one
        (500, None, "dear", 1.0),  # without the setting, 500 GPU-hours weigh their price as one does
        (1, 24, "dear", 1.0),  # below the threshold nothing changes
        (500, 24, "cheap", 6.0),  # 500 GPU-hours: level 5 (384-767), price and data weigh 6 times
        (50, "shipped", "dear", 1.0),  # the shipped threshold is 100 GPU-hours
        (500, "shipped", "cheap", 4.0),  # level 3 (400-799)
    ],
)
def test_a_long_job_takes_the_cheaper_pool_a_short_one_packs(hours, at, cluster_name, price_weight):
    policy = Policy() if at == "shipped" else Policy(dollars_at_stake_gpu_hours=at)
    r = request(gpus=1, expected_duration=timedelta(hours=hours))
    decision = decide(_fleet(), [r], [], policy, NOW).decisions[0]
    assert decision.outcome is Outcome.ADMITTED
    assert decision.placement.cluster == cluster_name
    price = decision.placement.part("price")
    assert price.weight == price_weight  # the explanation shows the weight the ranking used
    # and why: the GPU-hours at stake, the threshold and how many times the price counts
    figures = dict(price.detail)
    if price_weight > 1:
        assert figures["weighed_times"] == price_weight
        assert figures["gpu_hours_at_stake"] == hours
        assert figures["stakes_from_gpu_hours"] == (100 if at == "shipped" else at)
    else:
        assert "weighed_times" not in figures
    runner_up = decision.runners_up[0]
    assert runner_up.cluster != cluster_name
