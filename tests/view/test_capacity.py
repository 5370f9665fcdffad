"""Node and pool capacity: taking and giving back pods, with aggregates kept exact."""

from __future__ import annotations

import random

import pytest

from airflow_mcsched.view import FreeGpuHistogram, NodeAllocation, NodeCapacity, PoolCapacity
from airflow_mcsched.view.node_capacity import give_back_gpus


def node(name: str, free: tuple[int, ...], cpu: int = 64_000, mem: int = 262_144) -> NodeCapacity:
    return NodeCapacity.of(name, free, cpu, mem)


def test_take_whole_gpus_and_give_them_back():
    n = node("n", (1000,) * 4)
    taken = n.take(NodeAllocation("n", gpus=3, cpu_milli=8000, memory_mib=1024))
    assert taken.whole_gpus_free == 1
    assert taken.cpu_milli_free == 56_000
    back = taken.give_back(NodeAllocation("n", gpus=3, cpu_milli=8000, memory_mib=1024))
    assert back == n


def test_share_goes_to_the_fullest_gpu_it_fits_on():
    n = node("n", (1000, 600, 300))
    assert n.best_share_gpu(250) == 2
    assert n.best_share_gpu(500) == 1
    assert n.best_share_gpu(700) == 0
    assert n.take(NodeAllocation("n", gpu_milli=500)).gpu_milli_free == (1000, 100, 300)


def test_take_clamps_at_zero_when_the_node_filled_up_meanwhile():
    n = node("n", (0, 0), cpu=1000)
    taken = n.take(NodeAllocation("n", gpus=2, cpu_milli=4000))
    assert taken.whole_gpus_free == 0 and taken.cpu_milli_free == 0


def test_taken_anywhere_what_a_full_node_lacks_is_held_on_the_roomiest_others():
    """A pool of three nodes: n0 full (another of our pods landed there), n1 with 2 free, n2 with 4.
    A reservation of 4 GPUs and 8 cores named for n0: plainly taken, it takes nothing; taken
    anywhere, its GPUs and cores are held on n2 (the roomiest), and the pool's totals drop by them."""
    pool = PoolCapacity.of([node("n0", (0,) * 4, cpu=0), node("n1", (0, 0, 1000, 1000)), node("n2", (1000,) * 4)], 4)
    pods = [NodeAllocation("n0", gpus=4, cpu_milli=8000, memory_mib=1024)]
    assert pool.take(pods).whole_gpus_free == 6
    held = pool.take(pods, anywhere=True)
    assert [n.whole_gpus_free for n in held.nodes] == [0, 2, 0]
    assert held.nodes[2].cpu_milli_free == 56_000
    assert (held.whole_gpus_free, held.largest_whole_free_on_node) == (2, 2)
    assert held == PoolCapacity.of(held.nodes, 4)  # the aggregates are exact


def test_taken_anywhere_a_pod_that_fits_its_node_stays_there_and_a_share_moves_whole():
    pool = PoolCapacity.of([node("n0", (1000, 200)), node("n1", (1000, 1000))], 2)
    fits = pool.take([NodeAllocation("n0", gpus=1)], anywhere=True)
    assert [n.gpu_milli_free for n in fits.nodes] == [(0, 200), (1000, 1000)]
    share = pool.take([NodeAllocation("n0", gpus=1), NodeAllocation("n0", gpu_milli=600)], anywhere=True)
    assert [n.gpu_milli_free for n in share.nodes] == [(0, 200), (400, 1000)]
    full = PoolCapacity.of([node("n0", (0,)), node("n1", (0,))], 1)
    assert full.take([NodeAllocation("n0", gpus=1)], anywhere=True) == full  # no room anywhere: nothing to hold


def test_give_back_never_exceeds_what_the_node_has():
    n = node("n", (1000,), cpu=64_000)
    assert n.give_back(NodeAllocation("n", cpu_milli=4000)).cpu_milli_free == 64_000


def _given_back_one_by_one(n: NodeCapacity, pods: list[NodeAllocation]) -> NodeCapacity:
    """What `give_back_all` promises, worked out the plain way: each pod's GPUs by the general rule,
    CPU and memory capped at each step, the node's aggregates counted by `of`."""
    free = list(n.gpu_milli_free)
    cpu, mem = n.cpu_milli_free, n.memory_mib_free
    for a in pods:
        give_back_gpus(free, a)
        cpu = max(0, min(n.cpu_milli_allocatable, cpu + a.cpu_milli))
        mem = max(0, min(n.memory_mib_allocatable, mem + a.memory_mib))
    return NodeCapacity.of(n.name, tuple(free), cpu, mem, n.cpu_milli_allocatable, n.memory_mib_allocatable)


@pytest.mark.parametrize("seed", range(150))
def test_giving_back_several_pods_at_once_is_giving_them_back_one_by_one(seed):
    """Pods naming their GPUs (as the engine places them), naming GPUs the node lacks, naming none,
    and shares, on nodes read with shares, whole GPUs, more than a whole GPU on one, and less than
    nothing."""
    rng = random.Random(seed)
    gpus = rng.choice([0, 1, 4, 8])
    over, under = 1200 if seed % 7 == 0 else 1000, -300 if seed % 5 == 0 else 0  # reads over a GPU, or below none
    free = tuple(rng.choice([0, under, 100, 250, 500, 1000, over]) for _ in range(gpus))
    n = NodeCapacity.of("n", free, rng.randint(0, 64_000), rng.randint(0, 262_144), 64_000, 262_144)
    pods = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["named", "named", "unnamed", "share", "share", "cpu", "outside"])
        cpu, mem = rng.randint(0, 40_000), rng.randint(0, 200_000)
        if kind == "named" and gpus:
            named = tuple(sorted(rng.sample(range(gpus), rng.randint(1, gpus))))
            pods.append(NodeAllocation("n", len(named), 0, cpu, mem, named))
        elif kind == "share" and gpus:
            pods.append(NodeAllocation("n", 0, 250, cpu, mem, rng.choice([(), (rng.randrange(gpus),)])))
        elif kind == "outside":
            pods.append(NodeAllocation("n", 1, 0, cpu, mem, (gpus,)))  # a GPU this node does not have
        elif kind == "unnamed" and gpus:
            pods.append(NodeAllocation("n", rng.randint(1, gpus), 0, cpu, mem))
        else:
            pods.append(NodeAllocation("n", 0, 0, cpu, mem))
    assert n.give_back_all(pods) == _given_back_one_by_one(n, pods)


@pytest.mark.parametrize(
    ("free", "expected"),
    [([8, 8], {1: 2, 2: 2, 4: 2, 8: 2}), ([4, 4], {1: 2, 2: 2, 4: 2, 8: 0}), ([0, 1, 2, 7], {1: 3, 2: 2, 4: 1, 8: 0})],
)
def test_histogram_counts_nodes_with_at_least_k_free(free, expected):
    assert FreeGpuHistogram.of(free, 8).buckets() == expected


def test_histogram_largest_free_on_one_node():
    assert FreeGpuHistogram.of([4, 4], 8).largest_free_on_one_node == 4
    assert FreeGpuHistogram.of([], 8).largest_free_on_one_node == 0


def test_pool_take_is_copy_on_write():
    pool = PoolCapacity.of([node("a", (1000,) * 8), node("b", (1000,) * 8)], 8)
    after = pool.take([NodeAllocation("a", gpus=8)])
    assert pool.whole_gpus_free == 16 and after.whole_gpus_free == 8
    assert after.node("b") is pool.node("b")


def test_allocation_on_unknown_node_changes_nothing():
    pool = PoolCapacity.of([node("a", (1000,) * 8)], 8)
    assert pool.take([NodeAllocation("gone", gpus=1)]) is pool


def test_incremental_aggregates_equal_a_full_recount():
    """Random takes and give-backs: every aggregate equals the one computed from scratch."""
    rng = random.Random(7)
    pool = PoolCapacity.of([node(f"n{i}", (1000,) * 8) for i in range(6)], 8)
    held: list[NodeAllocation] = []
    for _ in range(300):
        if held and rng.random() < 0.4:
            a = held.pop(rng.randrange(len(held)))
            pool = pool.give_back([a])
        else:
            target = rng.choice(pool.nodes)
            if rng.random() < 0.5:
                a = NodeAllocation(target.name, gpus=rng.randint(1, 3), cpu_milli=rng.randint(0, 9000))
            else:
                a = NodeAllocation(target.name, gpu_milli=rng.choice([250, 500]), memory_mib=rng.randint(0, 9000))
            if not target.fits(a.gpus, a.gpu_milli, a.cpu_milli, a.memory_mib):
                continue
            pool = pool.take([a])
            held.append(a)
        fresh = PoolCapacity.of(pool.nodes, 8)
        for f in (
            "whole_gpus_free",
            "gpu_milli_free",
            "largest_whole_free_on_node",
            "largest_share_free",
            "cpu_milli_free",
            "memory_mib_free",
            "largest_cpu_milli_free_on_node",
            "largest_memory_mib_free_on_node",
            "histogram",
        ):
            assert getattr(pool, f) == getattr(fresh, f), f


def test_a_pool_given_the_nodes_a_caller_followed_equals_one_given_back_the_ends():
    """Backfill's replay follows the nodes that ends touch and hands them to the pool
    (`with_nodes`): the pool is the one that giving back the same ends would make."""
    rng = random.Random(3)
    pool = PoolCapacity.of([node(f"n{i}", (0,) * 6 + (1000, 1000), cpu=8_000) for i in range(5)], 8)
    for _ in range(50):
        ends = [
            NodeAllocation(f"n{rng.randrange(6)}", gpus=rng.randint(1, 3), cpu_milli=rng.randint(0, 20_000))
            for _ in range(rng.randint(1, 6))
        ]  # n5 is not in the pool: nothing to give back there
        followed: dict[int, NodeCapacity] = {}
        for a in ends:
            i = pool.node_index.get(a.node)
            if i is not None:
                followed[i] = (followed.get(i) or pool.nodes[i]).give_back(a)
        assert pool.with_nodes(followed) == pool.give_back(ends)
        pool = pool.with_nodes(followed).take([NodeAllocation("n0", gpus=1)])
    assert pool.with_nodes({}) is pool


def test_named_gpus_come_back_exactly_whatever_the_order_of_ends():
    """Whole GPUs and shares ending in any order leave the node as it was (no lost fragments)."""
    from airflow_mcsched.decision import choose_nodes
    from airflow_mcsched.decision.demand import Demand

    pool = PoolCapacity.of([node("n", (1000,) * 4)], 4)
    held = []
    for gpus, milli in [(0, 500), (0, 500), (2, 0), (0, 300), (0, 700)]:
        (a,) = choose_nodes(pool, Demand(pods=1, gpus=gpus, gpu_milli=milli, cpu_milli=1000, memory_mib=1))
        pool = pool.take([a])
        held.append(a)
    for a in [held[2], held[0], held[4], held[3], held[1]]:
        pool = pool.give_back([a])
    assert pool.node("n").gpu_milli_free == (1000,) * 4
