"""What makes a cycle cheaper must not change it: kept capacity objects across reads, the running
work's latest ends kept up to date, and the collector held off while a cycle runs."""

from __future__ import annotations

import dataclasses
import gc
import random
import threading
from datetime import timedelta

import pytest

from airflow_mcsched.access.profiles import WorkKind
from airflow_mcsched.decision import Outcome, Plugins, Policy, Reason, candidate_plan, decide, plan_cache, preemption
from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.decision.gc_pause import collector_paused
from airflow_mcsched.decision.running_work import RunningWork
from airflow_mcsched.decision.scores import DEFAULT_SCORES
from airflow_mcsched.decision.scores.base import Score
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.node_capacity import NodeCapacity
from tests.decision.fleet_factory import NOW, cluster, observe, pool, request, reservation, view_of

pytestmark = pytest.mark.usefixtures("fresh_memory")


def test_a_read_that_finds_a_pool_unchanged_keeps_its_capacity_object():
    """After a sync the engine's memory of every unchanged pool still holds: the builder hands such a
    pool the capacity object of its last read. A pool read differently gets a new one; a pool that
    changes back gets the object it had (view/capacity_table.py)."""
    profile = cluster("keep", pool("big", nodes=2), pool("small", "L4", gpus_per_node=4, nodes=2))
    first = view_of((profile, observe(profile, free={"big": [8, 2], "small": [4, 4]})))
    again = view_of((profile, observe(profile, free={"big": [8, 2], "small": [4, 4]}, at=NOW + timedelta(seconds=30))))
    assert again is not first
    assert again.pool("keep", "big").capacity is first.pool("keep", "big").capacity
    assert again.pool("keep", "small").capacity is first.pool("keep", "small").capacity
    changed = view_of((profile, observe(profile, free={"big": [8, 2], "small": [4, 0]})))
    assert changed.pool("keep", "big").capacity is first.pool("keep", "big").capacity
    assert changed.pool("keep", "small").capacity is not first.pool("keep", "small").capacity
    assert changed.pool("keep", "small").capacity.whole_gpus_free == 4
    back = view_of((profile, observe(profile, free={"big": [8, 2], "small": [4, 4]})))
    assert back.pool("keep", "small").capacity == first.pool("keep", "small").capacity
    assert back.pool("keep", "small").capacity is first.pool("keep", "small").capacity
    cordoned = view_of((profile, observe(profile, free={"big": [8, 2], "small": [4, 4]}, not_ready={"big": 1})))
    assert cordoned.pool("keep", "big").capacity is not first.pool("keep", "big").capacity
    assert cordoned.pool("keep", "big").capacity.nodes_excluded == 1


def test_grants_that_leave_a_pool_alike_reach_one_capacity_object():
    """Grants made in another order, or a read that finds a pool as grants left it, reach the object
    already met: what the engine worked out for it holds (view/capacity_table.py)."""
    profile = cluster("same", pool("big", nodes=2))
    view = view_of((profile, observe(profile, free={"big": [8, 8]})))
    memory = plan_cache.plan_memory(view, Policy(), Plugins())
    p, take = view.pool("same", "big"), plan_cache.Change.TAKE
    a = (NodeAllocation("same-big-0", gpus=2, gpu_indices=(6, 7)),)
    b = (NodeAllocation("same-big-1", gpus=4, gpu_indices=(4, 5, 6, 7)),)
    a_then_b = memory.changed(p.key, memory.changed(p.key, p.capacity, a, take), b, take)
    b_then_a = memory.changed(p.key, memory.changed(p.key, p.capacity, b, take), a, take)
    assert a_then_b is b_then_a
    assert (a_then_b.nodes[0].whole_gpus_free, a_then_b.nodes[1].whole_gpus_free) == (6, 4)
    read_after = view_of((profile, observe(profile, free={"big": [6, 4]})))  # GPUs 0-5 and 0-3 free
    assert read_after.pool("same", "big").capacity is a_then_b
    other = cluster("other", pool("big", nodes=2))  # same node content, another pool: its own object
    assert view_of((other, observe(other, free={"big": [8, 8]}))).pool("other", "big").capacity is not p.capacity


def test_a_cycle_after_a_sync_decides_as_one_with_nothing_remembered():
    profile = cluster("sync", pool("big", nodes=2), pool("small", "L4", gpus_per_node=4, nodes=2))
    queue = [request(f"r{i}", gpus=g) for i, g in enumerate((8, 4, 2, 1, 1, 8))]
    for free in ({"big": [8, 8], "small": [4, 4]}, {"big": [8, 8], "small": [4, 1]}, {"big": [0, 8], "small": [4, 1]}):
        view = view_of((profile, observe(profile, free=free)))
        remembered = decide(view, queue, [], Policy(), NOW)
        plan_cache.forget_all()
        assert remembered == decide(view, queue, [], Policy(), NOW)


def _ends_from_scratch(work: RunningWork, key) -> dict:
    ends: dict = {}
    for r in work.values():
        if r.key == key:
            for a in r.pods:
                ends[a.node] = max(ends.get(a.node, r.expected_end), r.expected_end)
    return ends


def test_latest_ends_follow_grants_and_evictions():
    hour = timedelta(hours=1)
    first = reservation("a", "c", "gpu", "n0", ends_in=hour)
    later = reservation("b", "c", "gpu", "n0", ends_in=3 * hour)
    other = reservation("d", "c", "gpu", "n1", ends_in=2 * hour)
    elsewhere = reservation("e", "c", "l4", "m0", ends_in=5 * hour)
    work = RunningWork([first, elsewhere], lambda _: None)
    key = ("c", "gpu")
    assert work.latest_ends(key) == {"n0": NOW + hour}
    work.add(later)
    work.add(other)
    assert work.latest_ends(key) == {"n0": NOW + 3 * hour, "n1": NOW + 2 * hour} == _ends_from_scratch(work, key)
    work.remove(later)  # the latest end on n0 was this one's
    assert work.latest_ends(key) == {"n0": NOW + hour, "n1": NOW + 2 * hour} == _ends_from_scratch(work, key)
    assert work.latest_ends(("c", "l4")) == {"m0": NOW + 5 * hour}


class _CollectorWatch(Score):
    """Records whether the cyclic collector ran enabled while the engine measured."""

    name = "collector_watch"
    dynamic = True
    seen: list[bool] = []

    def measure(self, ctx, cluster, pool, capacity, pods):
        self.seen.append(gc.isenabled())
        return 1.0


def test_the_collector_is_held_off_during_a_cycle_and_restored_after():
    from airflow_mcsched.decision.admission import Plugins

    plugins = Plugins(scores=(*DEFAULT_SCORES, _CollectorWatch()))
    view = view_of(cluster("gc", pool(nodes=1)))
    _CollectorWatch.seen.clear()
    assert gc.isenabled()
    result = decide(view, [request(gpus=1)], [], Policy(), NOW, plugins=plugins)
    assert result.decisions[0].outcome is Outcome.ADMITTED
    assert _CollectorWatch.seen and not any(_CollectorWatch.seen)
    assert gc.isenabled()
    gc.disable()
    try:  # someone else's choice to keep it off stands
        decide(view, [request(gpus=2)], [], Policy(), NOW, plugins=plugins)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_cycles_in_several_threads_keep_the_pause_until_the_last_ends():
    inside, release = threading.Event(), threading.Event()

    def long_cycle():
        with collector_paused():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=long_cycle)
    thread.start()
    inside.wait(10)
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other cycle still runs
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_cycle_leaves_no_garbage_with_reference_cycles():
    """What `collector_paused` relies on to skip the collections after a cycle: admitting, waiting,
    preempting and holding room for a backfill head, a cycle's objects are all freed by their
    reference counts, so a collection right after finds nothing unreachable."""
    busy, roomy = cluster("busy", pool(nodes=1)), cluster("roomy", pool(nodes=1))
    spare = cluster("spare", pool("l4", "L4", gpus_per_node=4, nodes=1))
    view = view_of(
        (busy, observe(busy, free={"gpu": [0]}, seen=["rsv-low"])),
        (roomy, observe(roomy, free={"gpu": [2]}, seen=["rsv-steady"])),
        spare,
    )
    running = [
        reservation("low", "busy", "gpu", "busy-gpu-0", gpus=8, priority=10, interruptible=True),
        reservation("steady", "roomy", "gpu", "roomy-gpu-0", gpus=6),
    ]
    queue = [
        request("urgent", gpus=8, priority_class="high"),  # preempts "low"
        request("big", gpus=8),  # waits, the backfill head
        request("small", gpus=2, gpu_types=["A100"]),  # would delay the head
        request("odd", gpus=16),  # fits nowhere
        request("tiny", gpus=1),  # admitted on the L4s
    ]
    gc.collect()
    result = decide(view, queue, running, Policy(), NOW)
    reasons = {d.request_id: d.reason for d in result.decisions}
    assert reasons == {
        "urgent": Reason.PREEMPTING,
        "big": Reason.WAITING_FOR_CAPACITY,
        "small": Reason.WAITING_BEHIND_HEAD,
        "odd": Reason.NO_FEASIBLE_CLUSTER,
        "tiny": Reason.ADMITTED,
    }
    del result
    assert gc.collect() == 0


def test_what_a_cycle_leaves_goes_to_the_oldest_generation_unwalked():
    walks: list[int] = []

    def watch(phase, info):
        if phase == "start":
            walks.append(info["generation"])

    gc.collect()
    gc.callbacks.append(watch)
    try:
        with collector_paused():
            kept = [[i] for i in range(20_000)]  # far past the young generation's threshold
        assert gc.get_count()[0] < 100
        assert walks == []
        oldest = {id(o) for o in gc.get_objects(generation=2)}
        assert all(id(o) in oldest for o in kept[::1000])
    finally:
        gc.callbacks.remove(watch)


def test_objects_someone_froze_stay_frozen():
    gc.collect()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with collector_paused():
            young = [[i] for i in range(10)]
        assert gc.get_freeze_count() == frozen
        assert not any(o is young[0] for o in gc.get_objects(generation=2))
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("whole_nodes", [1.0, 0.0], ids=["with a per-cycle score", "without"])
def test_what_is_remembered_for_a_demand_is_weighed_by_each_teams_own_weights(whole_nodes):
    """Fit verdicts and bounds are shared by every request of one demand, in a cycle and across
    cycles; their weighted sums are not: two teams whose weights differ rank the same pools apart."""
    tight = cluster("tight", pool("gpu", nodes=1))
    roomy = cluster("roomy", pool("gpu", nodes=1))
    view = view_of((tight, observe(tight, free={"gpu": [2]})), (roomy, observe(roomy)))
    policy = Policy(
        weights={"whole_nodes": whole_nodes},
        overrides=[
            {"team": "packer", "weights": {"fragmentation": 5.0, "load": 0.01}},
            {"team": "spreader", "weights": {"fragmentation": 0.01, "load": 5.0}},
        ],
    )
    packer, spreader = request("p", gpus=2, team="packer"), request("s", gpus=2, team="spreader")
    alone = {}
    for r in (packer, spreader):
        plan_cache.forget_all()
        alone[r.id] = decide(view, [r], [], policy, NOW).decisions[0]
    assert alone["p"].placement.cluster == "tight"
    assert alone["s"].placement.cluster == "roomy"
    plan_cache.forget_all()
    assert decide(view, [packer], [], policy, NOW).decisions[0] == alone["p"]
    assert decide(view, [spreader], [], policy, NOW).decisions[0] == alone["s"]  # after the packer's cycle
    plan_cache.forget_all()
    assert decide(view, [spreader], [], policy, NOW).decisions[0] == alone["s"]
    assert decide(view, [packer], [], policy, NOW).decisions[0] == alone["p"]


class _Hourly(Score):
    """A per-cycle score that reads the clock, ranked first among the dynamic scores (the engine's
    own per-cycle score comes last, which takes a shorter way to the same sums)."""

    name = "hourly"
    dynamic = True
    per_cycle = True

    def signature(self, ctx):
        return (ctx.demand, ctx.now)

    def measure(self, ctx, cluster, pool, capacity, pods):
        return ((ctx.now.hour + pool.ordinal) % 3) / 2


def test_per_cycle_scores_anywhere_in_the_order_decide_as_with_nothing_remembered():
    """Verdicts with per-cycle values are shared by every setup alike in demand and weights, across
    cycles, each with the stamp of what it read; across teams, shapes and hours the decisions are
    those of an engine that remembers nothing."""
    plugins = Plugins(scores=(_Hourly(), *DEFAULT_SCORES))
    profiles = [cluster(f"c{i}", pool("big", nodes=2), pool("small", "L4", gpus_per_node=4, nodes=2)) for i in range(3)]
    policy = Policy(overrides=[{"team": "b", "weights": {"fragmentation": 2.0, "load": 1.0}}])
    queue = [
        request(f"r{i}", gpus=g, team=t, expected_duration=timedelta(hours=h))
        for i, (g, t, h) in enumerate(
            [(1, "a", 1), (1, "b", 1), (2, "a", 2), (1, "a", 5), (4, "b", 1), (2, "b", 2), (1, "a", 0.5), (1, "a", 5)]
        )
    ]
    # running work with known ends, so that how long a request runs moves `whole_nodes`
    running = [
        reservation(f"run{i}{p}", f"c{i}", p, f"c{i}-{p}-0", ends_in=timedelta(hours=2 + i), expires_in=timedelta(1))
        for i in range(3)
        for p in ("big", "small")
    ]
    for hour in (0, 1, 2):
        now = NOW + timedelta(hours=hour)
        view = view_of(*((p, observe(p, at=now)) for p in profiles), at=now)
        remembered = [decide(view, queue, running, policy, now, plugins=plugins) for _ in range(2)]
        plan_cache.forget_all()
        assert remembered == [decide(view, queue, running, policy, now, plugins=plugins)] * 2
        admitted = [d for d in remembered[0].decisions if d.placement is not None]
        assert len(admitted) >= 4
        names = [p.name for p in admitted[0].placement.parts]
        assert names.index("hourly") < names.index("fragmentation")  # not last: the longer way
        for d in admitted:  # each value is the request's own: its figures, worked out afresh, agree
            whole_nodes = d.placement.part("whole_nodes")
            assert whole_nodes.value == pytest.approx(1 - dict(whole_nodes.detail)["stranded_node_fraction"], abs=1e-4)


def test_requests_alike_but_in_duration_do_not_share_whole_nodes_values():
    """`whole_nodes` reads how long a request runs: a request of the same shape that runs longer
    than the work already on a node is charged for the node it keeps busy, where a shorter one,
    judged on the same pools just before it, was not."""
    profiles = [cluster(name, pool("p", gpus_per_node=4, nodes=1)) for name in ("a", "b")]
    view = view_of(*profiles)
    running = [reservation(f"run-{c}", c, "p", f"{c}-p-0", ends_in=timedelta(hours=2)) for c in ("a", "b")]
    short = request("short", gpus=1, expected_duration=timedelta(hours=1), arrival=NOW - timedelta(minutes=2))
    long = request("long", gpus=1, expected_duration=timedelta(hours=5))
    first, second = decide(view, [short, long], running, Policy(), NOW).decisions
    assert first.placement.part("whole_nodes").value == 1.0  # ends before the work already there
    charged = second.placement.part("whole_nodes")
    # 3 h of its 5 past the node's last end, on a 4-GPU node it takes 1 of
    assert charged.value == pytest.approx(1 - 0.6 * 3 / 4)
    assert dict(charged.detail)["stranded_node_fraction"] == pytest.approx(0.45)
    assert {d.placement.cluster for d in (first, second)} == {"a"}  # a tie after the first grant: fleet order


@pytest.mark.parametrize("changing", [0.0, 0.3, 0.8], ids=["same reads", "some pools change", "most change"])
@pytest.mark.parametrize("seed", range(12))
def test_rankings_that_start_from_an_earlier_cycle_decide_as_with_nothing_remembered(seed, changing):
    """A ranking of a setup with a per-cycle score starts from where an earlier cycle's ranking left
    the pools, each refined pool back at a bound no cycle changes. Requests of one demand but
    different kinds share verdicts, so a ranking may meet pools known at an earlier hour's exact
    totals; an hour later the per-cycle score moves them, and the decisions are still those of an
    engine that remembers nothing. Random fleets, queues and numbers of runners-up; each hour a share of
    the pools (`changing`) reads other free GPUs, so starts are partly out of date (those pools go
    back at their most optimistic value) or mostly (the ranking starts afresh and replaces it)."""
    rng = random.Random(seed)
    plugins = Plugins(scores=(*DEFAULT_SCORES, _Hourly()))
    profiles = [
        cluster(
            f"c{i}",
            pool("big", nodes=2, price_per_gpu_hour=rng.choice([1.0, 2.0])),
            pool("small", "L4", gpus_per_node=4, nodes=2),
        )
        for i in range(rng.randint(3, 6))
    ]
    free = [{"big": [rng.randint(0, 8) for _ in "ab"], "small": [rng.randint(0, 4) for _ in "ab"]} for _ in profiles]
    policy = Policy(runners_up=rng.choice([0, 1, 2]))
    kinds = [WorkKind.TRAINING, WorkKind.BATCH, WorkKind.EVAL]
    queue = [
        request(
            f"r{i}",
            gpus=rng.choice([1, 1, 2, 4]),
            kind=rng.choice(kinds),
            arrival=NOW - timedelta(minutes=30 - i),
            expected_duration=timedelta(hours=1),
        )
        for i in range(rng.randint(4, 12))
    ]

    reads = [free]
    for _ in range(3):
        reads.append(
            [
                {
                    name: [rng.randint(0, 8 if name == "big" else 4) for _ in "ab"]
                    if rng.random() < changing
                    else f[name]
                    for name in f
                }
                for f in reads[-1]
            ]
        )

    def cycles(remember: bool) -> list:
        out = []
        for hour in range(4):
            now = NOW + timedelta(hours=hour)
            read = reads[hour]
            view = view_of(*((p, observe(p, free=f, at=now)) for p, f in zip(profiles, read, strict=True)), at=now)
            out.append(decide(view, queue, [], policy, now, plugins=plugins))
            if not remember:
                plan_cache.forget_all()
        return out

    remembered = cycles(remember=True)
    plan_cache.forget_all()
    assert remembered == cycles(remember=False)
    assert any(d.placement is not None for result in remembered for d in result.decisions)


def _random_node(rng: random.Random) -> NodeCapacity:
    gpus = rng.choice([0, 4, 8])
    milli = tuple(rng.choice([0, 0, 300, 700, 1000]) for _ in range(gpus))
    allocatable_cpu, allocatable_mem = 64_000, 512_000
    return NodeCapacity.of(
        "n", milli, rng.randint(0, allocatable_cpu), rng.randint(0, allocatable_mem), allocatable_cpu, allocatable_mem
    )


def _random_allocation(rng: random.Random, gpus_on_node: int) -> NodeAllocation:
    share = rng.random() < 0.4
    named = rng.random() < 0.5 and gpus_on_node
    return NodeAllocation(
        "n",
        0 if share else rng.randint(0, 2),
        rng.choice([200, 500]) if share else 0,
        rng.randint(0, 20_000),
        rng.randint(0, 100_000),
        (rng.randrange(gpus_on_node),) if named else (),
    )


@pytest.mark.parametrize("seed", range(40))
def test_giving_back_several_pods_at_once_is_giving_each_back_in_turn(seed):
    """Backfill's replay gives back what ends at one instant node by node at once
    (`NodeCapacity.give_back_all`): the node must be the one that giving back each pod in turn makes,
    caps on CPU, memory and whole GPUs included."""
    rng = random.Random(seed)
    node = _random_node(rng)
    pods = [_random_allocation(rng, node.gpus) for _ in range(rng.randint(1, 6))]
    in_turn = node
    for a in pods:
        in_turn = in_turn.give_back(a)
    assert node.give_back_all(pods) == in_turn


@pytest.mark.parametrize("seed", range(300))
def test_the_fewest_victims_on_a_node_are_found_as_by_checking_each_prefix(seed):
    """`_fewest_largest_first` carries the freed sums from one prefix of the victims to the next;
    the answer must be the first prefix that `_frees_enough` accepts, shares included."""
    rng = random.Random(seed)
    node = _random_node(rng)
    victims = []
    for i in range(rng.randint(1, 6)):
        pods = tuple(_random_allocation(rng, node.gpus) for _ in range(rng.randint(1, 2)))
        pods += (NodeAllocation("elsewhere", 1, 0, 1000, 1024),) if rng.random() < 0.3 else ()
        r = reservation(f"v{i}", "c", "big", "n", interruptible=True, priority=0)
        victims.append(preemption.VictimChoice(dataclasses.replace(r, pods=pods), Reason.PREEMPTED_BY_PRIORITY))
    by_size = sorted(victims, key=preemption._size_order)
    demand = Demand(1, *rng.choice([(rng.randint(1, 8), 0), (0, rng.choice([300, 600, 1000]))]),
                    rng.randint(0, 40_000), rng.randint(0, 300_000))  # fmt: skip
    by_prefix = next(
        (k for k in range(1, len(by_size) + 1) if preemption._frees_enough(node, by_size[:k], demand)), None
    )
    assert preemption._fewest_largest_first(node, by_size, demand) == by_prefix


def test_a_search_over_many_shares_gives_each_pod_back_once(monkeypatch):
    """Forty victims each holding a share of one GPU of a full node, and a pod asking a whole GPU:
    the search gives each victim's pod back once (not every pod so far at each step), and finds
    the prefix that checking each one finds."""
    node = NodeCapacity.of("n", (0,) * 8, 64_000, 512_000, 64_000, 512_000)
    victims = []
    for i in range(40):
        r = reservation(f"v{i:02}", "c", "big", "n", interruptible=True, priority=0)
        pods = (NodeAllocation("n", 0, 200, 100, 100, (i % 8,)),)
        victims.append(preemption.VictimChoice(dataclasses.replace(r, pods=pods), Reason.PREEMPTED_BY_PRIORITY))
    by_size = sorted(victims, key=preemption._size_order)
    demand = Demand(1, 1, 0, 1000, 1024)
    by_prefix = next(k for k in range(1, 41) if preemption._frees_enough(node, by_size[:k], demand))
    given: list[int] = []
    give_back_all = NodeCapacity.give_back_all

    def counted(self: NodeCapacity, pods: list[NodeAllocation]) -> NodeCapacity:
        given.append(len(pods))
        return give_back_all(self, pods)

    monkeypatch.setattr(NodeCapacity, "give_back_all", counted)
    assert preemption._fewest_largest_first(node, by_size, demand) == by_prefix > 8
    assert sum(given) == by_prefix  # each pod once


def test_what_a_per_cycle_score_gave_free_of_the_cycle_is_kept_only_while_it_still_is():
    """`whole_nodes` on a node with none of our work of known end reads neither the clock nor the
    running work, so a later cycle takes that verdict and candidate as they were (stamped with the
    pool's work alone: pool_stamps.py, `remembered_candidate`); once our work with a known end shows
    on the node, on the same view and capacity, it is judged again, and every cycle decides as an
    engine that remembers nothing."""
    profile = cluster("a", pool("p", gpus_per_node=4, nodes=2))
    view = view_of((profile, observe(profile, free={"p": [4, 2]}, seen=["rsv-ours"])))
    ask = [request("r", gpus=1, expected_duration=timedelta(hours=5))]
    ours = reservation("ours", "a", "p", "a-p-1", gpus=2, ends_in=timedelta(hours=1))
    cycles = [([], NOW), ([], NOW + timedelta(seconds=5)), ([ours], NOW + timedelta(seconds=10)), ([], NOW)]
    remembered = [decide(view, ask, running, Policy(), now) for running, now in cycles]
    fresh = []
    for running, now in cycles:
        plan_cache.forget_all()
        fresh.append(decide(view, ask, running, Policy(), now))
    assert remembered == fresh
    parts = [d.decisions[0].placement.part("whole_nodes") for d in remembered]
    assert parts[0] == parts[1] == parts[3] and parts[0].value == 1.0  # next to work of unknown end
    # our work ends 3,590 s later; the 5 h step outlives it by the rest, on a 4-GPU node it takes 1 of
    assert parts[2].value == pytest.approx(1 - (5 * 3600 - 3590) / (5 * 3600) * 3 / 4)
    assert remembered[0].decisions[0].placement is remembered[1].decisions[0].placement  # kept, not made again


class _Stamped(_Hourly):
    """A per-cycle score whose value never moves but whose figures name the cycle's clock."""

    name = "stamped"

    def measure(self, ctx, cluster, pool, capacity, pods):
        return 0.5

    def explain(self, ctx, cluster, pool, capacity, pods):
        return (("at", ctx.now.isoformat()),)


def test_a_chosen_pools_figures_that_read_the_cycle_are_made_in_each_cycle():
    """A kept candidate is taken again only when its values, and for the chosen pool the per-cycle
    scores' figures, are what this cycle makes of them."""
    from airflow_mcsched.decision.admission import Plugins

    plugins = Plugins(scores=(*DEFAULT_SCORES, _Stamped()))
    view = view_of(cluster("a", pool("p", gpus_per_node=4, nodes=2)))
    ask = [request("r", gpus=1)]
    moments = [NOW, NOW + timedelta(seconds=5), NOW + timedelta(seconds=5)]
    chosen = [decide(view, ask, [], Policy(), now, plugins=plugins).decisions[0].placement for now in moments]
    assert [dict(c.part("stamped").detail)["at"] for c in chosen] == [now.isoformat() for now in moments]
    assert chosen[1] is chosen[2] and chosen[0] != chosen[1]  # at one clock it is kept


@pytest.mark.parametrize("seed", range(5))
def test_a_plans_pools_sorted_by_their_totals_alone_keep_fleet_order_among_equal_totals(seed):
    """`_rank_statically` sorts by the negated totals alone (a float sort, quicker than one of
    tuples): the same pools in the same order as sorting (negated total, fleet position), bit for
    bit, with many equal totals and zero columns among them."""
    rng = random.Random(seed)
    profiles = [
        cluster(f"c{c}", pool("big", nodes=1), pool("small", "L4", gpus_per_node=4, nodes=1)) for c in range(12)
    ]
    view = view_of(*profiles)
    passed = [(c, p) for c in view.clusters for p in c.pools]
    plain = [s for s in DEFAULT_SCORES if not s.in_dollars and not s.dynamic]  # no normalising: totals as below
    static = tuple((score, rng.choice([0.5, 1.0, 2.0])) for score in plain)
    columns = [[rng.choice([0.0, -0.0, 0.25, 0.5, 1.0]) for _ in passed] for _ in static]
    eligible = candidate_plan._rank_statically(passed, static, columns)
    weighted = [[v * w for v in column] for column, (_, w) in zip(columns, static, strict=True)]
    totals = list(map(sum, zip(*weighted, strict=True)))
    expected = sorted(
        (-t, p.ordinal, c, p, v) for t, (c, p), v in zip(totals, passed, zip(*columns, strict=True), strict=True)
    )
    assert len({e[0] for e in expected}) < len(expected)  # equal totals: fleet order decides among them
    assert [(e[0], e[1], e[4]) for e in eligible] == [(e[0], e[1], e[4]) for e in expected]
    assert [repr(e[0]) for e in eligible] == [repr(e[0]) for e in expected]  # -0.0 stays -0.0
