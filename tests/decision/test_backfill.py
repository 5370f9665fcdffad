"""EASY backfill: the head of the queue gets a start time; later, smaller work must not delay it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_mcsched.decision import Outcome, Policy, Reason, decide
from airflow_mcsched.decision.backfill import HeadReservation
from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.view.allocation import NodeAllocation
from tests.decision.fleet_factory import DEFAULT_POLICY, NOW, cluster, observe, pool, request, reservation, view_of

HOUR = timedelta(hours=1)


def fleet(*extra_pools, free=(0, 4), running_ends=(2 * HOUR, HOUR)):
    """Node 0 is full until its 8-GPU job ends; node 1 runs a 4-GPU job (4 free)."""
    profile = cluster("a", pool("gpu", nodes=len(free)), *extra_pools)
    running = [
        reservation(f"run{i}", "a", "gpu", f"a-gpu-{i}", gpus=8 - f, ends_in=end)
        for i, (f, end) in enumerate(zip(free, running_ends, strict=True))
        if f < 8
    ]
    obs = observe(profile, free={"gpu": list(free)}, seen=[r.id for r in running])
    return view_of((profile, obs)), running


def head(**kw):
    return request("head", gpus=8, gpu_types=("A100",), arrival=NOW - timedelta(minutes=10), **kw)


def small(rid, minutes, **kw):
    return request(rid, gpus=2, expected_duration=timedelta(minutes=minutes), arrival=NOW - timedelta(minutes=5), **kw)


def test_head_gets_an_expected_start_from_running_work_ends():
    view, running = fleet()
    d = decide(view, [head()], running, DEFAULT_POLICY, NOW).decision("head")
    assert (d.outcome, d.reason) == (Outcome.WAITING, Reason.WAITING_FOR_CAPACITY)
    assert d.expected_start == NOW + HOUR
    assert "capacity is held for it" in d.summary


def test_small_job_that_ends_before_the_head_starts_backfills():
    view, running = fleet()
    result = decide(view, [head(), small("short", 30)], running, DEFAULT_POLICY, NOW)
    assert result.decision("short").outcome is Outcome.ADMITTED


def test_small_job_that_would_delay_the_head_waits_behind_it():
    view, running = fleet()
    result = decide(view, [head(), small("long", 180)], running, DEFAULT_POLICY, NOW)
    d = result.decision("long")
    assert (d.outcome, d.reason) == (Outcome.WAITING, Reason.WAITING_BEHIND_HEAD)
    assert "held for head" in d.rejection("a", "gpu").message


def test_long_job_runs_where_the_head_needs_nothing():
    """Node 2 is busy for 5 hours with 2 GPUs free: the head will use node 1, so node 2 is fair game."""
    view, running = fleet(free=(0, 4, 2), running_ends=(2 * HOUR, HOUR, 5 * HOUR))
    result = decide(view, [head(), small("long", 180)], running, DEFAULT_POLICY, NOW)
    d = result.decision("long")
    assert d.outcome is Outcome.ADMITTED and d.nodes == ("a-gpu-2",)


def test_long_job_goes_to_a_pool_the_head_cannot_use():
    view, running = fleet(pool("t4", gpu_type="T4", gpus_per_node=4, nodes=1, price_per_gpu_hour=9.0))
    result = decide(view, [head(), small("long", 180)], running, DEFAULT_POLICY, NOW)
    assert result.decision("long").pool == "t4"


def test_large_gang_is_not_starved_by_a_stream_of_small_jobs():
    view, running = fleet()
    gang = request("gang", gpus=8, pods=2, arrival=NOW - timedelta(minutes=10))
    stream = [small(f"s{i}", 240) for i in range(4)]
    result = decide(view, [gang, *stream], running, DEFAULT_POLICY, NOW)
    assert result.decision("gang").expected_start == NOW + 2 * HOUR
    assert all(result.decision(f"s{i}").reason is Reason.WAITING_BEHIND_HEAD for i in range(4))


def test_without_backfill_small_jobs_take_what_is_free():
    view, running = fleet()
    result = decide(view, [head(), small("long", 180)], running, Policy(backfill=False), NOW)
    assert result.decision("long").outcome is Outcome.ADMITTED
    assert result.decision("head").expected_start is None


def test_head_without_any_running_work_of_ours_to_wait_for_gets_no_start():
    """Others' pods (not ours) fill the nodes: no known end, so no start time and no held capacity."""
    profile = cluster("a", pool("gpu", nodes=1))
    view = view_of((profile, observe(profile, free={"gpu": [4]})))
    result = decide(view, [head(), small("long", 180)], [], DEFAULT_POLICY, NOW)
    assert result.decision("head").expected_start is None
    assert result.decision("long").outcome is Outcome.ADMITTED


def test_waiting_summary_warns_when_the_deadline_will_be_missed():
    view, running = fleet()
    late = head(expected_duration=2 * HOUR, deadline=NOW + 2 * HOUR)
    d = decide(view, [late], running, DEFAULT_POLICY, NOW).decision("head")
    assert "miss its deadline" in d.summary


# -- more than one head ------------------------------------------------------------------------
def gang(rid, minutes_waited, hours=4):
    return request(
        rid,
        gpus=8,
        expected_duration=hours * HOUR,
        arrival=NOW - timedelta(minutes=minutes_waited),
        gpu_types=("A100",),
    )


@pytest.mark.parametrize(
    ("heads", "large_heads", "second_gang_start", "small_job"),
    [
        # one hold (gang1, node 1 at 1h): the small job takes node 0 and gang2 gets no start
        (1, 0, None, (Outcome.ADMITTED, ("a-gpu-0",))),
        # gang2 holds node 0 from 2h: the small job (until 3h) would delay it, so it waits
        (4, 0, NOW + 2 * HOUR, (Outcome.WAITING, ())),
        # one hold for any request, one more for a large one: gang2 gets it
        (1, 1, NOW + 2 * HOUR, (Outcome.WAITING, ())),
    ],
)
def test_each_blocked_gang_gets_its_own_hold(heads, large_heads, second_gang_start, small_job):
    """Node 0: 2 free until 2h; node 1: 4 free until 1h."""
    view, running = fleet(free=(2, 4), running_ends=(2 * HOUR, HOUR))
    queue = [gang("gang1", 20), gang("gang2", 10), small("long", 180)]
    policy = Policy(backfill_heads=heads, backfill_large_heads=large_heads, backfill_large_after_seconds=None)
    result = decide(view, queue, running, policy, NOW)
    assert result.decision("gang1").expected_start == NOW + HOUR
    assert result.decision("gang2").expected_start == second_gang_start
    d = result.decision("long")
    assert (d.outcome, d.nodes) == small_job
    if d.outcome is Outcome.WAITING:
        assert d.reason is Reason.WAITING_BEHIND_HEAD
        assert "held for gang2" in d.rejection("a", "gpu").message


@pytest.mark.parametrize(
    ("first_gang_hours", "second_gang_start"),
    [
        (4, NOW + 2 * HOUR),  # node 1 is gang1's from 1h to 5h: gang2 waits for node 0 (2h)
        (0.5, NOW + 1.5 * HOUR),  # gang1 is done on node 1 at 1.5h, before node 0 frees
    ],
)
def test_a_later_head_is_never_promised_what_an_earlier_one_holds(first_gang_hours, second_gang_start):
    view, running = fleet()  # node 0 full until 2h; node 1: 4 free until 1h
    queue = [gang("gang1", 20, hours=first_gang_hours), gang("gang2", 10)]
    result = decide(view, queue, running, Policy(backfill_heads=2), NOW)
    assert result.decision("gang1").expected_start == NOW + HOUR
    assert result.decision("gang2").expected_start == second_gang_start


@pytest.mark.parametrize(
    ("large_after_seconds", "gang_start"),
    [
        (None, NOW + 2 * HOUR),  # the extra holds go to large requests at once
        (600, NOW + 2 * HOUR),  # the gang has waited 10 minutes: long enough
        (601, None),  # not yet: no hold for it, so small work may still take its room
    ],
)
def test_holds_beyond_the_first_heads_go_to_large_requests_only(large_after_seconds, gang_start):
    """Both nodes full until 1h and 2h: everything waits. One hold for any request (the first, a
    one-GPU job); the extra holds skip the second one-GPU job and go to the gang behind it, once it
    has waited `backfill_large_after_seconds`."""
    view, running = fleet(free=(0, 0), running_ends=(2 * HOUR, HOUR))
    one_gpu = [request(f"one{i}", gpus=1, arrival=NOW - timedelta(minutes=30 - i)) for i in range(2)]
    queue = [*one_gpu, gang("gang", 10)]
    policy = Policy(backfill_heads=1, backfill_large_heads=4, backfill_large_after_seconds=large_after_seconds)
    result = decide(view, queue, running, policy, NOW)
    assert result.decision("one0").expected_start == NOW + HOUR
    assert result.decision("one1").expected_start is None
    gang_decision = result.decision("gang")
    assert gang_decision.expected_start == gang_start
    assert ("capacity is held for it" in gang_decision.summary) is (gang_start is not None)


@pytest.mark.parametrize("seed", range(40))
def test_a_gang_head_is_held_from_the_first_end_after_which_its_gpus_are_free(seed):
    """A gang of whole GPUs is held from the first end of our work after which its nodes have room
    for every pod (the replay skips ends after which they cannot yet: `_PoolReplay`). Random nodes
    and running work; the answer is checked against the free GPUs left at each end."""
    import random

    rng = random.Random(seed)
    per_node, nodes = rng.choice([4, 8]), rng.randint(2, 5)
    profile = cluster("a", pool("gpu", gpus_per_node=per_node, nodes=nodes))
    running, free = [], []
    for n in range(nodes):
        used = 0
        for k in range(rng.randint(0, 3)):
            if used == per_node:
                break
            gpus = rng.randint(1, per_node - used)
            ends_in = rng.randint(1, 6) * HOUR
            running.append(reservation(f"r{n}-{k}", "a", "gpu", f"a-gpu-{n}", gpus=gpus, ends_in=ends_in))
            used += gpus
        free.append(per_node - used)
    view = view_of((profile, observe(profile, free={"gpu": free}, seen=[r.id for r in running])))
    pods, gpus = rng.randint(2, 3), rng.choice([1, 2, per_node])
    gang = request("gang", gpus=gpus, pods=pods, arrival=NOW - timedelta(minutes=10))
    d = decide(view, [gang], running, DEFAULT_POLICY, NOW).decision("gang")

    def room_after(t):
        left = [per_node - sum(r.pods[0].gpus for r in running if r.pods[0].node == f"a-gpu-{n}" and r.expected_end > t)
                for n in range(nodes)]  # fmt: skip
        return sum(f // gpus for f in left) >= pods

    if room_after(NOW):
        assert d.outcome is Outcome.ADMITTED
    else:
        ends = sorted({r.expected_end for r in running})
        assert d.expected_start == next((t for t in ends if room_after(t)), None)


def _random_fleet(rng, overdue: bool, at=NOW):
    """Two clusters of one or two pools each, read `at`, with our work running on most nodes: ends
    on the hour from NOW (so several end at one instant, in several pools), some past already when
    `overdue`."""
    profiles, observations, running = [], [], []
    for c in ("a", "b"):
        pools = [
            pool(f"p{k}", gpus_per_node=rng.choice([4, 8]), nodes=rng.randint(1, 3)) for k in range(rng.randint(1, 2))
        ]
        profile = cluster(c, *pools)
        free = {}
        for p in pools:
            free[p.name] = []
            for n in range(p.nodes):
                used, busy = 0, p.gpus_per_node - rng.choice([0, 0, 1, 2])  # most nodes full
                for k in range(rng.randint(1, 3)):
                    if used == busy:
                        break
                    gpus = busy - used if k == 2 else rng.randint(1, busy - used)
                    hours = rng.randint(-2 if overdue else 1, 5) or 1
                    rid = f"{c}{p.name}n{n}k{k}"
                    running.append(
                        reservation(
                            rid, c, p.name, f"{c}-{p.name}-{n}", gpus=gpus, ends_in=hours * HOUR, expires_in=12 * HOUR
                        )
                    )
                    used += gpus
                free[p.name].append(p.gpus_per_node - used)
        profiles.append(profile)
        observations.append(observe(profile, free=free, seen=[r.id for r in running if r.cluster == c], at=at))
    return list(zip(profiles, observations, strict=True)), running


def _first_start(entries, running, now, gpus, pods):
    """The oracle: the first instant (an end of our work, work past its end ending now) after which
    some pool has room for the request, found by giving back everything that ended by then."""
    ends = sorted({max(r.expected_end, now) for r in running})
    for t in ends:
        for profile, _ in entries:
            for p in profile.node_pools:
                left = []
                for n in range(p.nodes):
                    node = f"{profile.name}-{p.name}-{n}"
                    busy = sum(
                        r.pods[0].gpus for r in running if r.pods[0].node == node and max(r.expected_end, now) > t
                    )
                    left.append(p.gpus_per_node - busy)
                if sum(f // gpus for f in left) >= pods:
                    return t
    return None


@pytest.mark.parametrize("seed", range(30))
def test_a_head_is_held_from_the_first_end_after_which_any_of_its_pools_has_room(seed):
    """Ends of work in several pools at one instant, and work past its expected end (taken to end
    now), replayed over every pool the head may use: its expected start is the first instant after
    which one of them has room for it."""
    import random

    rng = random.Random(seed)
    entries, running = _random_fleet(rng, overdue=seed % 2 == 0)
    view = view_of(*entries)
    gpus, pods = rng.choice([(2, 3), (4, 2), (4, 3), (8, 1), (8, 2)])
    gang = request("gang", gpus=gpus, pods=pods, arrival=NOW - timedelta(minutes=10))
    d = decide(view, [gang], running, DEFAULT_POLICY, NOW).decision("gang")
    if d.outcome is Outcome.WAITING:
        assert d.expected_start == _first_start(entries, running, NOW, gpus, pods)
    else:
        assert _first_start(entries, running, NOW, gpus, pods) is None or d.outcome is Outcome.ADMITTED


def test_holds_made_from_work_kept_sorted_across_cycles_are_those_of_a_fresh_engine(fresh_memory):
    """The ends of a pool's work are kept sorted from cycle to cycle while its work is the same
    (backfill.py): cycles later on the same work, where more of it is past its end, and after some
    work ended, decide as an engine that remembers nothing."""
    import random

    from airflow_mcsched.decision import plan_cache

    held_later = 0
    for seed in range(12):
        _, running = _random_fleet(random.Random(seed), overdue=False)
        queue = [
            request("gang", gpus=4, pods=2, arrival=NOW - timedelta(minutes=10)),
            request("big", gpus=8, arrival=NOW - timedelta(minutes=9)),
            small("short", 30),
        ]
        policy = Policy(backfill_heads=2)
        cycles = [(NOW, running), (NOW + 2 * HOUR, running), (NOW + 3 * HOUR, running), (NOW + 3 * HOUR, running[1:])]
        plan_cache.forget_all()
        views = {
            now: view_of(*_random_fleet(random.Random(seed), overdue=False, at=now)[0], at=now) for now, _ in cycles
        }
        kept = [repr(decide(views[now], queue, work, policy, now).decisions) for now, work in cycles]
        fresh = []
        for now, work in cycles:
            plan_cache.forget_all()
            fresh.append(repr(decide(views[now], queue, work, policy, now).decisions))
        assert kept == fresh, seed
        held_later += sum("Expected to start" in text for text in kept[1:])
    assert held_later >= 6  # holds made while work was past its end, or after some ended


def test_a_head_answers_again_once_a_placement_is_committed_before_its_start():
    """A head remembers its answers by the pods asked about, until a commit changes the room it
    expects at its start: the same pods are then judged again."""
    view = view_of(cluster("a", pool("gpu", nodes=1)))
    gpu = view.pools[0]
    held = HeadReservation("head", gpu, NOW + HOUR, Demand(1, 6, 0, 1000, 1024), gpu.capacity, NOW + 2 * HOUR)
    two = (NodeAllocation("a-gpu-0", 2, 0, 1000, 1024),)
    runs_past_start = NOW + 3 * HOUR
    assert held.allows(gpu, two, runs_past_start)  # 8 free at the start: 6 stay for the head
    held.commit(gpu, (NodeAllocation("a-gpu-0", 2, 0, 1000, 1024, (7, 6)),), runs_past_start)
    assert not held.allows(gpu, two, runs_past_start)  # 6 free at the start: 4 would stay
    assert held.allows(gpu, two, NOW + HOUR)  # ends by the start: no question


def _random_node(rng, name: str, gpus: int):
    from airflow_mcsched.view.node_capacity import NodeCapacity

    shares = [rng.choice([0, 0, 250, 500, 750, 1000, 1000, 1200]) for _ in range(gpus)]  # 1200: a read over a GPU
    cpu_top, mem_top = 32_000, 256_000
    return NodeCapacity.of(name, tuple(shares), rng.randint(0, cpu_top), rng.randint(0, mem_top), cpu_top, mem_top)


def _random_pod(rng, nodes: list[str], gpus: int) -> NodeAllocation:
    node = rng.choice([*nodes, "gone"])  # "gone": a node that left the pool
    cpu, mem = rng.choice([0, 4_000, 40_000]), rng.choice([0, 16_000, 300_000])  # 40,000, 300,000: over the top
    if rng.random() < 0.5:  # whole GPUs, named or not
        n = rng.randint(1, gpus)
        indices = tuple(rng.sample(range(gpus), n)) if rng.random() < 0.8 else ()
        return NodeAllocation(node, n, 0, cpu, mem, indices)
    milli = rng.choice([250, 500, 900])  # a share, named or not
    return NodeAllocation(node, 0, milli, cpu, mem, (rng.randrange(gpus),) if rng.random() < 0.8 else ())


@pytest.mark.parametrize("seed", range(40))
def test_a_replay_gives_pods_back_as_the_pool_itself_does(seed):
    """A head's replay follows the nodes that ends touch as plain numbers (`backfill._PoolReplay`):
    what it makes of them, and the pods of a gang its nodes hold, are what `PoolCapacity.give_back`
    gives, at every step. Random nodes and pods: named and unnamed GPUs, shares, reads of more than
    a whole GPU, CPU and memory past what a node has, a node that left the pool."""
    import random

    from airflow_mcsched.decision.backfill import _PoolReplay
    from airflow_mcsched.view.pool_capacity import PoolCapacity

    rng = random.Random(seed)
    gpus = rng.choice([4, 8])
    names = [f"n{i}" for i in range(rng.randint(1, 4))]
    expected = PoolCapacity.of([_random_node(rng, n, gpus) for n in names], gpus)
    gang = Demand(rng.randint(2, 4), rng.choice([1, 2, gpus]), 0, 1_000, 1_000)
    one_pod = Demand(1, 0, rng.choice([0, 500]), rng.choice([0, 30_000]), 1_000)
    replays = [_PoolReplay(expected, gang), _PoolReplay(expected, one_pod)]
    for step in range(rng.randint(1, 6)):
        pods = [_random_pod(rng, names, gpus) for _ in range(rng.randint(1, 4))]
        for replay in replays:
            replay.give_back(pods)
        expected = expected.give_back(pods)
        slots = sum(n.whole_gpus_free // gang.gpus for n in expected.nodes)
        assert replays[0].may_fit() is (slots >= gang.pods)
        if step % 2:  # made now, or after more steps
            assert [replay.capacity().nodes for replay in replays] == [expected.nodes] * 2
    assert [replay.capacity().nodes for replay in replays] == [expected.nodes] * 2
