"""Scores: the soft preferences that rank the node pools that can take a request."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_mcsched.access.profiles import WorkKind
from airflow_mcsched.decision import Outcome, Policy
from tests.decision.fleet_factory import NOW, cluster, decide_one, observe, pool, request, view_of


def test_cheaper_pool_inside_the_same_cluster_wins_when_all_else_is_equal():
    view = view_of(cluster("a", pool("dear", price_per_gpu_hour=3.0), pool("cheap", price_per_gpu_hour=1.0)))
    decision = decide_one(view, request(gpus=8))
    assert (decision.cluster, decision.pool) == ("a", "cheap")
    assert [(c.cluster, c.pool) for c in decision.runners_up] == [("a", "dear")]
    assert decision.placement.part("price").value > decision.runners_up[0].part("price").value


def test_identical_pools_are_chosen_in_fleet_order():
    view = view_of(cluster("b", pool("x")), cluster("a", pool("x")))
    assert decide_one(view, request(gpus=1)).cluster == "b"


def test_interruptible_work_pays_and_prefers_the_spot_price():
    view = view_of(
        cluster("od", pool(price_per_gpu_hour=2.0)),
        cluster("spot", pool(price_per_gpu_hour=3.0, spot_price_per_gpu_hour=1.0)),
    )
    interruptible = decide_one(view, request(gpus=1, interruptible=True))
    assert interruptible.cluster == "spot"
    assert interruptible.placement.price_per_gpu_hour == 1.0
    assert interruptible.reservation.price_per_gpu_hour == 1.0
    assert interruptible.placement.part("spot").value == pytest.approx(2 / 3)
    steady = decide_one(view, request(gpus=1))
    assert steady.cluster == "od" and steady.placement.price_per_gpu_hour == 2.0


def _data_fleet(remote_price: float):
    local = cluster(
        "local",
        pool(price_per_gpu_hour=2.0),
        data={"datasets": ["corpus"], "egress_price_per_gib": 0.09, "ingress_gbps": 10},
    )
    remote = cluster("remote", pool(price_per_gpu_hour=remote_price), data={"ingress_gbps": 1})
    return view_of(local, remote)


DATA_REQUEST = {"gpus": 8, "expected_duration": timedelta(hours=2), "data": [{"location": "corpus", "size_gib": 100}]}


def test_data_locality_prefers_the_cluster_holding_the_dataset():
    """Local: 16 GPU-hours x 2.0 = 32. Remote: 28.8 + 9 egress + 3.4 of GPUs idle while staging."""
    decision = decide_one(_data_fleet(remote_price=1.8), request(**DATA_REQUEST))
    assert decision.cluster == "local"
    figures = dict(decision.placement.part("data").detail)
    assert figures["local_gib"] == 100 and figures["staging_seconds"] == 0


def test_data_locality_gives_way_when_the_local_cluster_is_much_more_expensive():
    """Remote: 4.8 + 9 egress + 0.6 idle = 14.4, well under the local 32."""
    decision = decide_one(_data_fleet(remote_price=0.3), request(**DATA_REQUEST))
    assert decision.cluster == "remote"
    figures = dict(decision.placement.part("data").detail)
    assert figures["remote_gib"] == 100
    assert figures["egress_dollars"] == pytest.approx(9.0)  # paid to the holder, 0.09 per GiB
    assert figures["staging_seconds"] == pytest.approx(100 * 8 * 1024**3 / 1e9, rel=1e-3)  # at 1 Gbit/s


def test_fragmentation_prefers_the_node_left_fullest():
    profile = cluster("a", pool(nodes=3))
    view = view_of((profile, observe(profile, free={"gpu": [8, 2, 5]})))
    decision = decide_one(view, request(gpus=2))
    assert decision.nodes == ("a-gpu-1",)
    assert decision.placement.part("fragmentation").value == 1.0


def test_fragmentation_prefers_the_pool_where_the_pod_fits_tightly():
    a = cluster("a", pool("x"))
    b = cluster("b", pool("x"))
    view = view_of((a, observe(a, free={"x": [8, 8]})), (b, observe(b, free={"x": [4, 8]})))
    assert decide_one(view, request(gpus=4)).cluster == "b"


def test_suitability_for_the_kind_of_work():
    view = view_of(
        cluster("serving", pool(), suited_for=[WorkKind.INFERENCE]),
        cluster("training", pool(), suited_for=[WorkKind.TRAINING]),
    )
    assert decide_one(view, request(gpus=1, kind="training")).cluster == "training"
    assert decide_one(view, request(gpus=1, kind="inference")).cluster == "serving"


def test_load_prefers_clusters_with_fewer_pods_pending():
    busy, calm = cluster("busy", pool()), cluster("calm", pool())
    view = view_of((busy, observe(busy, pods_pending=40)), calm)
    decision = decide_one(view, request(gpus=1))
    assert decision.cluster == "calm"
    assert dict(decision.placement.part("load").detail)["pods_pending"] == 0


def test_weights_come_from_the_policy_and_its_overrides():
    """With price weighted out for team 'rich', suitability decides; for others, price does."""
    view = view_of(
        cluster("cheap", pool(price_per_gpu_hour=1.0), suited_for=[WorkKind.INFERENCE]),
        cluster("suited", pool(price_per_gpu_hour=3.0), suited_for=[WorkKind.TRAINING]),
    )
    policy = Policy.from_dict({"overrides": [{"team": "rich", "weights": {"price": 0}}]})
    assert decide_one(view, request(gpus=1, kind="training"), policy=policy).cluster == "cheap"
    rich = decide_one(view, request(gpus=1, kind="training", team="rich"), policy=policy)
    assert rich.cluster == "suited"
    assert "price" not in {p.name for p in rich.placement.parts}


def test_score_is_the_weighted_mean_of_its_parts():
    decision = decide_one(view_of(cluster("a", pool())), request(gpus=1))
    parts = decision.placement.parts
    assert decision.placement.score == pytest.approx(sum(p.weighted for p in parts) / sum(p.weight for p in parts))
    assert decision.outcome is Outcome.ADMITTED


@pytest.mark.parametrize(
    "ask",
    [
        {"gpus": 8, "expected_duration": timedelta(hours=2), "data": [{"location": "corpus", "size_gib": 100}]},
        {
            "gpus": 1,
            "interruptible": True,
            "data": [{"location": "corpus", "size_gib": 7}, {"location": "logs", "size_gib": 30}],
        },
        {"gpu_milli": 250, "expected_duration": timedelta(minutes=10), "data": [{"location": "logs", "size_gib": 500}]},
        {"gpus": 2, "interruptible": True, "data": [{"location": "nowhere", "size_gib": 20}]},
        {"gpus": 3, "expected_duration": timedelta(minutes=70), "data": [{"location": "corpus", "size_gib": 130}]},
    ],
)
def test_a_static_column_is_each_pools_measure_bit_for_bit(ask):
    """A new plan measures a static score over every pool in one pass (`Score.static_column`); the
    cost scores work the request's part out once there. The values must be `measure`'s exactly: a
    plan's order and ties rest on them. Pools of one cluster come apart here too (a column over
    the pools a later plan lacks)."""
    from airflow_mcsched.decision.admission import DEFAULT_PLUGINS
    from airflow_mcsched.decision.context import RequestContext
    from airflow_mcsched.decision.cycle_state import CycleState
    from airflow_mcsched.decision.scores.cost import DataLocalityScore, PriceScore

    view = view_of(
        cluster(
            "home",
            pool("a", price_per_gpu_hour=2.3, spot_price_per_gpu_hour=0.7),
            pool("b", gpu_type="H100", price_per_gpu_hour=4.1),
            data={"datasets": ["corpus"], "egress_price_per_gib": 0.09, "ingress_gbps": 10},
        ),
        cluster("far", pool("a", price_per_gpu_hour=1.7, spot_price_per_gpu_hour=0.3), data={"ingress_gbps": 3}),
        cluster(
            "logs",
            pool("a", price_per_gpu_hour=2.9),
            pool("b", gpu_type="L4", price_per_gpu_hour=0.9, spot_price_per_gpu_hour=0.35),
            data={"datasets": ["logs"], "egress_price_per_gib": 0.02, "ingress_gbps": 25},
        ),
    )
    cycle = CycleState(view, {}, Policy(), NOW, DEFAULT_PLUGINS)
    ctx = RequestContext.of(request(**ask), 0, cycle)
    pairs = [(c, p) for c in view.clusters for p in c.pools]
    apart = [pairs[4], pairs[0], pairs[2], pairs[1], pairs[3]]  # home's and logs' pools not together
    for score in (DataLocalityScore(), PriceScore()):
        for pools in (pairs, apart):
            measured = [score.measure(ctx, c, p, None, ()) for c, p in pools]
            assert score.static_column(ctx, pools) == measured
            assert len(set(measured)) > 1, "the fleet tells the pools apart"
