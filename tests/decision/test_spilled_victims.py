"""A victim held elsewhere in its pool ("spilled") is searched and stopped where it is held.

A reservation whose pod no read shows yet is held on its own node, and what that node has no room
for on the pool's other nodes (`PoolCapacity.take(..., anywhere=True)`). Until session 32 the
preemption search and the eviction gave back its own pods on its own node, so after a spilled
victim stopped the engine's nodes differed from what stopping it frees: a gang stopped it and
still could not start, and a whole node that stopping it frees was missed. The cycle now reads such
work as held (`WorkBase.held`).
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from airflow_mcsched.decision import decide, plan_cache
from airflow_mcsched.decision.outcome import Outcome
from airflow_mcsched.decision.policy import DEFAULT_PRIORITY_CLASSES, Policy
from airflow_mcsched.decision.work_base import WorkBase
from airflow_mcsched.view.allocation import NodeAllocation
from tests.decision.fleet_factory import NOW, cluster, decide_one, observe, pool, request, reservation, view_of

pytestmark = pytest.mark.usefixtures("fresh_memory")

C = cluster("c", pool("gpu", gpus_per_node=8, nodes=2))
LOW = DEFAULT_PRIORITY_CLASSES["low"]
HOUR, SECOND = timedelta(hours=1), timedelta(seconds=1)
# node 0 has 4 GPUs in use by work the read shows, node 1 is empty; X (6 GPUs, granted on node 0)
# has no pod in the read yet: 4 of its GPUs are held on node 0 and 2 spill to node 1. Stopping X
# leaves node 0 with 4 free GPUs and node 1 with 8.
VIEW = view_of((C, observe(C, free={"gpu": [4, 8]})))
X = reservation("x", "c", "gpu", "c-gpu-0", gpus=6, interruptible=True, priority=LOW)


def test_a_gang_that_stopping_a_spilled_victim_cannot_seat_does_not_stop_it():
    gang = request("gang", gpus=6, pods=2, gpu_types=["A100"], priority_class="critical")  # needs two nodes with 6
    decision = decide_one(VIEW, gang, [X])
    assert decision.outcome is Outcome.WAITING and not decision.victims


def test_a_whole_node_that_stopping_a_spilled_victim_frees_is_found():
    whole = request("whole", gpus=8, gpu_types=["A100"], priority_class="critical")  # node 1 is whole once X stops
    decision = decide_one(VIEW, whole, [X])
    assert decision.outcome is Outcome.PREEMPTING and [v.reservation_id for v in decision.victims] == ["rsv-x"]


def test_the_room_a_spilled_victim_leaves_is_held_where_it_was():
    """After the preemption, the capacity held for the preemptor and what the next request sees
    agree with the nodes as they are: node 0 keeps its 4 free GPUs for a request of 4."""
    whole = request("whole", gpus=8, gpu_types=["A100"], priority_class="critical")
    four = request("four", gpus=4, gpu_types=["A100"], priority_class="normal")
    result = decide(VIEW, [whole, four], [X], Policy(), NOW)
    by_id = {d.request_id: d for d in result.decisions}
    assert by_id["whole"].outcome is Outcome.PREEMPTING
    assert by_id["four"].outcome is Outcome.ADMITTED and by_id["four"].placement.pods[0].node == "c-gpu-0"


def test_the_base_holds_a_spilled_reservation_where_its_pool_holds_it_and_others_as_they_are():
    fits = reservation("fits", "c", "gpu", "c-gpu-1", gpus=2, interruptible=True, priority=LOW)
    base = WorkBase({r.id: r for r in (X, fits)})
    held = base.held(VIEW)
    assert set(held) == {"rsv-x"}  # `fits` is held as itself on its own node
    x = held["rsv-x"]
    assert sorted((a.node, a.gpus) for a in x.pods) == [("c-gpu-0", 4), ("c-gpu-1", 2)]
    assert x.gpu_equivalent == X.gpu_equivalent == 6 and x.id == X.id and x.priority == X.priority
    assert base.held(VIEW) is held  # the same reads: the same mapping


def test_work_the_read_shows_is_never_held_elsewhere():
    seen = view_of((C, observe(C, free={"gpu": [4, 8]}, seen=["rsv-x"])))
    assert WorkBase({X.id: X}).held(seen) == {}


def test_a_pool_holds_each_allocation_where_taking_it_anywhere_does():
    capacity = VIEW.pools_by_key[("c", "gpu")].capacity
    a, b = NodeAllocation("c-gpu-0", 6, 0, 1000, 4096), NodeAllocation("c-gpu-0", 2, 0, 1000, 4096)
    held = capacity.held_anywhere([a, b])
    # b's CPU and memory still fit on node 0, its GPUs only on node 1
    expected = [[("c-gpu-0", 4), ("c-gpu-1", 2)], [("c-gpu-0", 0), ("c-gpu-1", 2)]]
    assert [[(p.node, p.gpus) for p in h] for h in held] == expected
    assert capacity.take([a, b], anywhere=True).whole_gpus_free == 16 - 4 - 8  # the same holds as a take
    assert capacity.held_anywhere([NodeAllocation("c-gpu-1", 2, 0, 1000, 4096)])[0][0].node == "c-gpu-1"


def _random_case(rng):
    pools = {"a": 3, "b": 2}
    profile = cluster("c", *(pool(p, gpus_per_node=8, nodes=n) for p, n in pools.items()))
    free = {p: [rng.choice([0, 2, 4, 8]) for _ in range(n)] for p, n in pools.items()}
    work = []
    for i in range(rng.randint(2, 8)):
        p = rng.choice(sorted(pools))
        work.append(
            reservation(
                f"w{i}",
                "c",
                p,
                f"c-{p}-{rng.randrange(pools[p])}",
                gpus=rng.choice([1, 2, 4, 6]),
                interruptible=rng.random() < 0.7,
                priority=rng.choice([LOW, DEFAULT_PRIORITY_CLASSES["normal"]]),
                ends_in=rng.choice([1, 2, 5]) * HOUR,
            )
        )
    seen = [r.id for r in work if rng.random() < 0.3]
    view = view_of((profile, observe(profile, free=free, seen=seen)))
    queue = [
        request(
            f"q{i}",
            gpus=rng.choice([1, 2, 4, 8]),
            pods=rng.choice([1, 1, 2]),
            gpu_types=["A100"],
            priority_class=rng.choice(["normal", "high", "critical"]),
            arrival=NOW - rng.randint(1, 600) * SECOND,
        )
        for i in range(rng.randint(1, 5))
    ]
    return view, work, queue


@pytest.mark.parametrize("seed", range(40))
def test_spilled_work_decides_as_the_same_work_given_where_it_is_held(seed):
    """However the reads spill unseen work, a cycle decides as it would if the caller had handed it
    that work already where the pool holds it (which spills nothing): the one gives back, stops and
    replays ends exactly where the other does."""
    view, work, queue = _random_case(random.Random(seed))
    held = WorkBase({r.id: r for r in work}).held(view)
    as_held = [held.get(r.id, r) for r in work]
    assert WorkBase({r.id: r for r in as_held}).held(view) == {}
    spilled = decide(view, queue, work, Policy(), NOW)
    plan_cache.forget_all()
    given = decide(view, queue, as_held, Policy(), NOW)
    assert spilled.decisions == given.decisions
    assert [v.reservation_id for v in spilled.preemptions] == [v.reservation_id for v in given.preemptions]


def test_some_random_cases_spill_and_preempt():
    """The random cases above reach what they are about: spilled work, and preemptions."""
    spills = preempts = 0
    for seed in range(40):
        view, work, queue = _random_case(random.Random(seed))
        spills += bool(WorkBase({r.id: r for r in work}).held(view))
        preempts += bool(decide(view, queue, work, Policy(), NOW).preemptions)
    assert spills >= 10 and preempts >= 5
