"""The node chooser: best fit inside a pool, deterministic, reusable by any policy."""

from __future__ import annotations

from airflow_mcsched.decision import choose_nodes
from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.view import NodeCapacity, PoolCapacity


def pool_of(*gpu_frees: tuple[int, ...], cpu: int = 64_000) -> PoolCapacity:
    return PoolCapacity.of([NodeCapacity.of(f"n{i}", free, cpu, 262_144) for i, free in enumerate(gpu_frees)], 8)


def demand(gpus: int = 0, milli: int = 0, pods: int = 1, cpu: int = 1000) -> Demand:
    return Demand(pods=pods, gpus=gpus, gpu_milli=milli, cpu_milli=cpu, memory_mib=1024)


WHOLE = (1000,) * 8


def test_pod_goes_where_it_leaves_fewest_gpus_free():
    pool = pool_of(WHOLE, (1000, 1000, 0, 0, 0, 0, 0, 0), (1000,) * 4 + (0,) * 4)
    assert [a.node for a in choose_nodes(pool, demand(gpus=2))] == ["n1"]
    assert [a.node for a in choose_nodes(pool, demand(gpus=3))] == ["n2"]


def test_eight_gpu_pod_needs_one_node_with_eight_free():
    pool = pool_of((1000,) * 4 + (0,) * 4, (1000,) * 4 + (0,) * 4)
    assert choose_nodes(pool, demand(gpus=8)) is None
    assert choose_nodes(pool, demand(gpus=4, pods=2)) is not None


def test_fractional_shares_pack_onto_partly_used_gpus():
    pool = pool_of((1000, 1000), (1000, 400))
    placed = choose_nodes(pool, demand(milli=300))
    assert placed[0].node == "n1" and placed[0].gpu_milli == 300
    after = pool.take(placed)
    assert after.node("n1").gpu_milli_free == (1000, 100)
    assert after.whole_gpus_free == 3


def test_share_larger_than_any_partial_gpu_takes_a_whole_one():
    pool = pool_of((1000, 200))
    after = pool.take(choose_nodes(pool, demand(milli=500)))
    assert after.node("n0").gpu_milli_free == (500, 200)


def test_cpu_only_pods_go_where_gpus_are_already_taken():
    pool = pool_of(WHOLE, (0,) * 8, (1000,) * 2 + (0,) * 6)
    assert choose_nodes(pool, demand())[0].node == "n1"


def test_gang_places_every_pod_or_none():
    pool = pool_of(WHOLE, WHOLE, (1000,) * 4 + (0,) * 4)
    placed = choose_nodes(pool, demand(gpus=4, pods=3))
    assert sorted(a.node for a in placed) == ["n0", "n0", "n2"]
    assert choose_nodes(pool, demand(gpus=8, pods=3)) is None


def test_ties_go_to_less_cpu_left_then_node_order():
    pool = PoolCapacity.of(
        [
            NodeCapacity.of("n0", WHOLE, 64_000, 262_144),
            NodeCapacity.of("n1", WHOLE, 16_000, 262_144),
            NodeCapacity.of("n2", WHOLE, 16_000, 262_144),
        ],
        8,
    )
    assert choose_nodes(pool, demand(gpus=8))[0].node == "n1"


def test_same_input_same_choice():
    pool = pool_of(WHOLE, (1000,) * 3 + (0,) * 5, (1000,) * 3 + (0,) * 5)
    assert choose_nodes(pool, demand(gpus=2, pods=2)) == choose_nodes(pool, demand(gpus=2, pods=2))
