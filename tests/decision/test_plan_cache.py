"""What the engine remembers of a view changes how fast it decides, never what it decides."""

from __future__ import annotations

import random
from datetime import UTC, timedelta

import pytest

from airflow_mcsched.access.profiles import (
    ClusterState,
    DataLocality,
    GpuReservation,
    Interconnect,
    WorkKind,
)
from airflow_mcsched.decision import Outcome, Policy, Reason, TeamQuota, WeightOverride, decide, plan_cache
from airflow_mcsched.decision.admission import DEFAULT_PLUGINS
from airflow_mcsched.view.snapshot import GlobalView
from tests.decision.fleet_factory import NOW, cluster, observe, pool, request, reservation, view_of

GPU_TYPES = ("A100", "H100", "L4", "T4")
TEAMS = ("ml", "vision", "search", "ads")

POLICIES = {
    "default": Policy(),
    "overrides and quotas": Policy(
        overrides=(
            WeightOverride(team="vision", weights={"price": 3.0}),
            WeightOverride(kind=WorkKind.TRAINING, weights={"load": 0.0, "fragmentation": 1.0}),
        ),
        quotas=(
            TeamQuota(team="search", nominal={"*": 6}, cohort="shared"),
            TeamQuota(team="ads", nominal={"A100": 4, "L4": 4}, cohort="shared"),
        ),
        max_staging_seconds=120,
        work_kind_is_hard=True,
    ),
    "no backfill, no preemption, no runners-up": Policy(backfill=False, preemption=False, runners_up=0),
    "short staleness": Policy(max_observation_age_seconds=45),
    "no per-cycle score": Policy(weights={"whole_nodes": 0.0}),  # everything is reused across cycles
}


@pytest.fixture(autouse=True)
def _fresh_memory():
    plan_cache.forget_all()
    yield
    plan_cache.forget_all()


def random_view(rng: random.Random, reads: random.Random | None = None) -> GlobalView:
    """A small fleet drawn from `rng`: GPU types, prices, spot offers, sharing, RDMA, free GPUs and
    CPU, data, reserved GPUs, cordoned, failed and old capacity reads. With `reads`, what the
    capacity reads found (free GPUs and CPU, read times, reservations seen) is drawn from it: views
    drawn with one `rng` and other `reads` share their layout."""
    reads = reads or rng
    entries = []
    for c in range(rng.randint(2, 5)):
        big, small = rng.sample(GPU_TYPES, 2)
        pools = [
            pool(
                "big",
                big,
                gpus_per_node=8,
                nodes=rng.randint(1, 3),
                price_per_gpu_hour=rng.choice([1.0, 2.0, 4.0]),
                spot_price_per_gpu_hour=rng.choice([None, 0.5]),
                interconnect=[Interconnect.INFINIBAND] if rng.random() < 0.5 else [],
            ),
            pool("small", small, gpus_per_node=4, nodes=2, gpu_sharing=rng.random() < 0.5, price_per_gpu_hour=0.8),
            pool("cpu", None, nodes=1),
        ]
        profile = cluster(
            f"c{c}",
            *pools,
            region=f"r{c % 2}",
            state=ClusterState.CORDONED if rng.random() < 0.1 else ClusterState.ACTIVE,
            suited_for=rng.sample(list(WorkKind), 3),
            data=DataLocality(
                datasets=[f"ds-{c % 3}"], ingress_gbps=rng.choice([1.0, 10.0]), egress_price_per_gib=0.05
            ),
            reserved=[GpuReservation(gpu_type=big, gpus=4, priority_classes=["high"])] if rng.random() < 0.3 else [],
        )
        error = "connection refused" if reads.random() < 0.1 else None
        pods_pending = rng.randint(0, 5)
        obs = observe(
            profile,
            free={"big": [reads.randint(0, 8) for _ in range(pools[0].nodes)], "small": [reads.randint(0, 4)] * 2},
            cpu_free={"big": [reads.choice([4, 32, 64]) for _ in range(pools[0].nodes)]},
            at=NOW - timedelta(seconds=reads.choice([10, 10, 10, 60])),
            error=error,
            seen=[f"rsv-run-{c}-{i}" for i in range(3) if reads.random() < 0.5],
            pods_pending=pods_pending,
        )
        entries.append((profile, obs))
    return view_of(*entries)


def random_queue(rng: random.Random, n: int) -> list:
    out = []
    for i in range(n):
        shape = rng.random()
        kw: dict = {}
        if shape < 0.5:
            kw["gpus"] = rng.choice([1, 2, 4, 8])
            if rng.random() < 0.4:
                kw["gpu_types"] = tuple(rng.sample(GPU_TYPES, 2))
        elif shape < 0.6:
            kw.update(gpus=8, pods=2, needs_rdma=rng.random() < 0.5)
        elif shape < 0.8:
            kw["gpu_milli"] = rng.choice([250, 500])
        else:
            kw["cpu"] = rng.choice([2, 8])
        if rng.random() < 0.3:
            kw["data"] = [{"location": f"ds-{rng.randrange(3)}", "size_gib": rng.choice([10, 500])}]
        if rng.random() < 0.1:
            kw["max_cost_per_hour"] = 5.0
        out.append(
            request(
                f"q{i}",
                team=rng.choice(TEAMS),
                kind=rng.choice(list(WorkKind)),
                interruptible=rng.random() < 0.3,
                priority_class=rng.choice(["low", "normal", "high"]),
                expected_duration=timedelta(minutes=rng.choice([10, 60, 600])),
                arrival=NOW - timedelta(seconds=n - i),
                **kw,
            )
        )
    return out


def random_running(rng: random.Random, view: GlobalView) -> list:
    """Our running work: some of it shown by the capacity reads, some not yet, some with a lapsed lease."""
    out = []
    for c in view.clusters:
        for i in range(3):
            p = rng.choice([p for p in c.pools if p.gpu_type])
            if not p.capacity.nodes:
                continue
            node = rng.choice(p.capacity.nodes).name
            out.append(
                reservation(
                    f"run-{c.name[1:]}-{i}",
                    c.name,
                    p.name,
                    node,
                    gpus=rng.choice([1, 2]),
                    team=rng.choice(TEAMS),
                    priority=rng.choice([0, 100]),
                    interruptible=rng.random() < 0.5,
                    gpu_type=p.gpu_type,
                    expires_in=timedelta(minutes=rng.choice([-1, 10, 10])),
                    ends_in=timedelta(minutes=rng.choice([5, 90])),
                )
            )
    return out


def _uncached(view, queue, running, policy, now):
    plan_cache.forget_all()
    return decide(view, queue, running, policy, now)


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(6))
def test_decisions_with_and_without_memory_are_equal(seed, policy_name):
    """Many cycles on one view (other queues, other running work, later clocks) fill the memory;
    each decision equals the one made with nothing remembered, down to explanations and scores."""
    rng = random.Random(seed)
    policy = POLICIES[policy_name]
    view = random_view(rng)
    cycles = [
        (random_queue(rng, rng.randint(1, 40)), random_running(rng, view), NOW + timedelta(seconds=s))
        for s in (0, 0, 20, 40, 0)
    ]
    remembered = [decide(view, q, running, policy, now) for q, running, now in cycles]
    remembered += [decide(view, q, running, policy, now) for q, running, now in reversed(cycles)]
    fresh = [_uncached(view, q, running, policy, now) for q, running, now in cycles]
    assert remembered[: len(cycles)] == fresh
    assert remembered[len(cycles) :] == fresh[::-1]


def test_a_changed_view_is_decided_afresh():
    """A new view (another capacity read) never uses what was learnt from the old one."""
    profile = cluster("a", pool("gpu", "A100", nodes=1), pool("l4", "L4", gpus_per_node=4, nodes=1))
    before = view_of((profile, observe(profile, free={"gpu": [8], "l4": [4]})))
    queue = [request("big", gpus=8), request("small", gpus=1)]
    assert decide(before, queue, [], Policy(), NOW).decisions[0].pool == "gpu"
    after = view_of((profile, observe(profile, free={"gpu": [2], "l4": [4]})))
    result = decide(after, queue, [], Policy(), NOW)
    assert result == _uncached(after, queue, [], Policy(), NOW)
    assert result.decisions[0].outcome is Outcome.WAITING


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(4))
def test_views_alike_in_layout_share_the_memory_and_decide_as_themselves(seed, policy_name):
    """New capacity reads of the same fleet (other free GPUs and CPU, read times, reservations seen,
    reads that failed) reuse what was learnt from the earlier ones, and each view is still decided
    as itself."""
    policy = POLICIES[policy_name]
    views = [random_view(random.Random(seed), reads=random.Random(1000 * seed + i)) for i in range(4)]
    assert len({v.layout for v in views}) == 1
    rng = random.Random(seed)
    cycles = [
        (view, random_queue(rng, rng.randint(1, 30)), random_running(rng, view), NOW + timedelta(seconds=s))
        for view in (*views, views[0], views[2])
        for s in (0, 20)
    ]
    remembered = [decide(view, q, running, policy, now) for view, q, running, now in cycles]
    assert plan_cache.remembered_layouts() == 1
    fresh = [_uncached(view, q, running, policy, now) for view, q, running, now in cycles]
    assert remembered == fresh


def test_layout_leaves_out_everything_a_capacity_read_tells():
    """Free capacity, read times, reservations seen, pod counts and a read's failure (its error, its
    nodes gone) are not in it; anything from the profile is. (The pods pending are in the capacity
    of the cluster's pools: `test_a_new_pending_count_makes_only_its_clusters_pools_new`.)"""
    profile = cluster("a", pool("gpu", "A100", nodes=2))
    base = view_of((profile, observe(profile, free={"gpu": [8, 8]}, pods_pending=1)))
    same = view_of(
        (
            profile,
            observe(
                profile, free={"gpu": [2, 0]}, at=NOW - timedelta(seconds=5), seen=["x"], pods_pending=1, pods_running=7
            ),
        )
    )
    assert same.layout == base.layout
    busier = view_of((profile, observe(profile, free={"gpu": [8, 8]}, pods_pending=4, pods_running=3)))
    assert busier.layout == base.layout
    failed = view_of((profile, observe(profile, error="connection refused", pods_pending=1)))
    assert failed.layout == base.layout
    assert failed.pool("a", "gpu").capacity.allocatable_gpus == 0
    dearer = view_of(cluster("a", pool("gpu", "A100", nodes=2, price_per_gpu_hour=9.0)))
    cordoned = view_of(cluster("a", pool("gpu", "A100", nodes=2), state=ClusterState.CORDONED))
    assert len({base.layout, dearer.layout, cordoned.layout}) == 3


def test_a_failed_read_keeps_what_was_learnt_and_is_decided_as_itself():
    """A read that fails leaves its cluster without nodes and with an error; one that finds its nodes
    not ready leaves it healthy without nodes; then a read finds them again. The memory is kept
    throughout (one layout), while what decisions read of each read follows it: the cluster is
    ruled out while its read has failed, and `scarcity` counts the fleet's GPUs as read, so a
    flexible request's plan is made for each count, whether or not a cluster verdict changed too.
    Decisions are those made with nothing kept."""
    a = cluster("a", pool("gpu", "A100", gpus_per_node=8, nodes=2))
    b = cluster("b", pool("gpu", "L4", gpus_per_node=8, nodes=2))
    c = cluster("c", pool("gpu", "A100", gpus_per_node=8, nodes=1, price_per_gpu_hour=0.5))

    def read(error: str | None = None, not_ready: int = 0) -> GlobalView:
        a_read = observe(a, free={"gpu": [1, 1]}, error=error, not_ready={"gpu": not_ready})
        return view_of((a, a_read), (b, observe(b)), (c, observe(c)))

    views = (read(), read(error="connection refused"), read(), read(not_ready=2), read())
    queue = [request("flexible", gpus=1, gpu_types=("A100", "L4")), request("gang", gpus=8, pods=6)]
    remembered = [decide(v, queue, [], Policy(), NOW) for v in views]
    assert plan_cache.remembered_layouts() == 1
    assert remembered == [_uncached(v, queue, [], Policy(), NOW) for v in views]

    def decision(result, rid: str):
        return next(d for d in result.decisions if d.request_id == rid)

    def fleet_gpus(result) -> float:
        placement = decision(result, "flexible").placement
        return dict(placement.part("scarcity").detail)["fleet_gpus_of_type"]

    # with a's 16 A100s out of the fleet, A100s are scarce for a flexible request: it takes an L4
    assert [decision(r, "flexible").placement.cluster for r in remembered] == ["a", "b", "a", "b", "a"]
    assert [fleet_gpus(r) for r in remembered] == [24, 16, 24, 16, 24]
    reasons_in_a = [[x.reason for x in decision(r, "gang").rejections if x.cluster == "a"] for r in remembered]
    assert reasons_in_a[1] == [Reason.CLUSTER_UNHEALTHY]
    assert Reason.CLUSTER_UNHEALTHY not in reasons_in_a[0] + reasons_in_a[3]


def test_a_new_pending_count_makes_only_its_clusters_pools_new():
    """A read whose only news is a cluster's count of pending pods keeps the layout, and so all the
    engine learnt of the fleet; the cluster's pools get new capacity objects (what the engine keeps
    per capacity object, `load`'s values among it, is worked out again for them), the other
    clusters' pools keep theirs, and the count read back keeps the first objects. Decisions follow
    the count as with nothing kept."""
    a, b = cluster("a", pool("gpu", "A100", nodes=2)), cluster("b", pool("gpu", "A100", nodes=2))

    def read(pending_a: int) -> GlobalView:
        return view_of((a, observe(a, pods_pending=pending_a)), (b, observe(b, pods_pending=1)))

    calm, busy, calm_again = read(0), read(30), read(0)
    assert calm.layout == busy.layout == calm_again.layout
    assert busy.pool("a", "gpu").capacity is not calm.pool("a", "gpu").capacity
    assert busy.pool("a", "gpu").capacity.pods_pending == 30
    assert busy.pool("b", "gpu").capacity is calm.pool("b", "gpu").capacity
    assert calm_again.pool("a", "gpu").capacity is calm.pool("a", "gpu").capacity
    queue = [request("r1", gpus=1)]
    remembered = [decide(v, queue, [], Policy(), NOW) for v in (calm, busy, calm_again)]
    assert [r.decisions[0].placement.cluster for r in remembered] == ["a", "b", "a"]
    assert plan_cache.remembered_layouts() == 1
    assert remembered == [_uncached(v, queue, [], Policy(), NOW) for v in (calm, busy, calm_again)]


def test_views_of_one_profile_object_share_its_declared_layout_and_equal_profiles_match():
    """The builder works out what a profile declares once per profile object and place in the
    fleet; an equal profile made anew (a fleet file read again) gives an equal layout, and one
    that differs in any declared field, or sits elsewhere in the fleet, another."""
    profile = cluster("a", pool("gpu", "A100", nodes=2))
    first = view_of((profile, observe(profile, free={"gpu": [8, 8]})))
    second = view_of((profile, observe(profile, free={"gpu": [0, 8]})))
    assert second.clusters[0].declared is first.clusters[0].declared
    taken = first.with_capacity({("a", "gpu"): second.pool("a", "gpu").capacity})  # as a cycle grants
    assert taken.pool("a", "gpu").capacity.whole_gpus_free == 8
    assert taken.clusters[0].declared is first.clusters[0].declared
    again = cluster("a", pool("gpu", "A100", nodes=2))
    assert again is not profile
    assert view_of(again).layout == first.layout
    relabelled = view_of(cluster("a", pool("gpu", "A100", nodes=2, labels={"room": "b"})))
    behind = view_of(cluster("z", pool("cpu", None, nodes=1)), profile)
    assert relabelled.layout != first.layout
    assert behind.clusters[1].declared != first.clusters[0].declared


def test_memory_holds_a_bounded_number_of_layouts():
    views = [random_view(random.Random(seed)) for seed in range(plan_cache.MAX_LAYOUTS + 3)]
    for view in views:
        decide(view, [request(gpus=1)], [], Policy(), NOW)
    assert plan_cache.remembered_layouts() == plan_cache.MAX_LAYOUTS


def _per_capacity(memory: plan_cache.PlanMemory) -> tuple[int, int]:
    """(verdicts and bounds in the memory's fit memos and its fruitless victim searches, candidates
    and summaries of its setups)."""
    setups = [s for shared in memory._shared.values() for s in shared.setups.values()]
    kept = sum(map(len, memory.fit_memo.values())) + sum(map(len, memory.fruitless.values()))
    return kept, sum(s.remembered() for s in setups)


def test_a_memory_keeping_too_much_per_capacity_forgets_it_and_keeps_its_plans(monkeypatch):
    """A fleet whose reads drift makes new capacity objects every read, and what is kept per capacity
    object (one table per demand and per setup) grows with them: past `MAX_PER_CAPACITY` entries, a
    memory forgets all of it at the start of a cycle, looking every `TRIM_EVERY` cycles."""
    view = random_view(random.Random(3))
    rng = random.Random(3)
    queue, running = random_queue(rng, 30), random_running(rng, view)
    decide(view, queue, running, Policy(), NOW)
    memory = plan_cache.plan_memory(view, Policy(), DEFAULT_PLUGINS)
    verdicts, candidates = _per_capacity(memory)
    assert verdicts and candidates
    plans = {id(shared): (len(shared.plans), len(shared.setups)) for shared in memory._shared.values()}
    monkeypatch.setattr(plan_cache, "TRIM_EVERY", 3)
    monkeypatch.setattr(plan_cache, "MAX_PER_CAPACITY", verdicts + candidates)  # not more than it: kept
    assert [memory.trim() for _ in range(3)] == [False, False, False]
    assert _per_capacity(memory) == (verdicts, candidates)
    monkeypatch.setattr(plan_cache, "MAX_PER_CAPACITY", verdicts + candidates - 1)
    looks = [memory.trim() for _ in range(3)]
    assert looks.count(True) == 1  # looked at once in three cycles
    assert _per_capacity(memory) == (0, 0)
    assert {id(shared): (len(shared.plans), len(shared.setups)) for shared in memory._shared.values()} == plans


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
def test_decisions_of_a_memory_that_forgets_at_every_cycle_are_equal(monkeypatch, policy_name):
    monkeypatch.setattr(plan_cache, "TRIM_EVERY", 1)
    monkeypatch.setattr(plan_cache, "MAX_PER_CAPACITY", 0)
    rng = random.Random(7)
    policy = POLICIES[policy_name]
    views = [random_view(random.Random(7), reads=random.Random(70 + i)) for i in range(3)]
    cycles = [(view, random_queue(rng, 25), random_running(rng, view)) for view in (*views, views[0])]
    remembered = [decide(view, q, running, policy, NOW) for view, q, running in cycles]
    assert remembered == [_uncached(view, q, running, policy, NOW) for view, q, running in cycles]


def test_a_cluster_growing_stale_is_judged_at_each_clock_reading():
    """Cluster verdicts read the clock: the same view can be fresh at one `now` and stale at the next."""
    profile = cluster("a", pool(nodes=1))
    view = view_of((profile, observe(profile, at=NOW - timedelta(seconds=30))))
    policy = Policy(max_observation_age_seconds=60)
    ask = [request(gpus=1)]
    assert decide(view, ask, [], policy, NOW).decisions[0].outcome is Outcome.ADMITTED
    stale = decide(view, ask, [], policy, NOW + timedelta(minutes=5)).decisions[0]
    assert stale.rejections[0].reason is Reason.CLUSTER_STALE
    read_at = (NOW - timedelta(seconds=30)).astimezone(UTC)
    assert stale.rejections[0].message == (
        f"capacity last read at {read_at:%Y-%m-%d %H:%M:%S} UTC, longer ago than the 60s allowed"
    )
    assert decide(view, ask, [], policy, NOW).decisions[0].outcome is Outcome.ADMITTED


def test_a_read_that_stays_old_keeps_the_plans_from_cycle_to_cycle():
    """A cluster whose sync stopped stays stale with the same read for many cycles: its verdict says
    the same each cycle, so the plans shared per set of cluster verdicts are kept (none is made
    again), and decisions are those made with nothing kept."""
    stopped, live = cluster("a", pool(nodes=1)), cluster("b", pool(nodes=1, price_per_gpu_hour=9.0))
    policy = Policy(max_observation_age_seconds=60)
    ask = [request("one", gpus=1), request("flexible", gpus=2, gpu_types=("A100", "H100"))]
    results, shared, cycles = [], [], []
    for minutes in (5, 6, 7):
        now = NOW + timedelta(minutes=minutes)
        view = view_of((stopped, observe(stopped, at=NOW)), (live, observe(live, at=now)), at=now)
        cycles.append((view, now))
        results.append(decide(view, ask, [], policy, now))
        memory = plan_cache.plan_memory(view, policy, DEFAULT_PLUGINS)
        shared.append({id(s): len(s.plans) for s in memory._shared.values()})
    assert results == [_uncached(view, ask, [], policy, now) for view, now in cycles]
    assert shared[0] == shared[1] == shared[2]
    assert len(shared[0]) == 1
    assert [r.decisions[0].placement.cluster for r in results] == ["b", "b", "b"]


def test_other_policies_on_the_same_view_are_kept_apart():
    profile = cluster("a", pool("cheap", "A100", nodes=1, price_per_gpu_hour=1.0), pool("fast", "H100", nodes=1))
    view = view_of(profile)
    ask = [request(gpus=1, gpu_types=("A100", "H100"))]
    assert decide(view, ask, [], Policy(), NOW).decisions[0].pool == "cheap"
    no_price = Policy(weights={"price": 0.0, "load": 0.0, "fragmentation": 0.0, "suitability": 0.0})
    assert decide(view, ask, [], no_price, NOW) == _uncached(view, ask, [], no_price, NOW)


def test_equal_policies_share_one_memory_and_unequal_ones_do_not():
    """The memory is found by the policy's value: a policy read again from its file (a new, equal
    object) keeps what the engine learnt, while one that differs in any field never reaches it."""
    view = random_view(random.Random(3))
    first = POLICIES["overrides and quotas"]
    again = Policy.model_validate(first.model_dump())
    assert again is not first and again == first
    memory = plan_cache.plan_memory(view, first, None)
    assert plan_cache.plan_memory(view, again, None) is memory
    other = again.model_copy(update={"runners_up": again.runners_up + 1})
    assert plan_cache.plan_memory(view, other, None) is not memory
    assert plan_cache.plan_memory(view, Policy(), None) is not memory
    queue = random_queue(random.Random(3), 20)
    assert decide(view, queue, [], again, NOW) == _uncached(view, queue, [], first, NOW)


def test_reservations_not_yet_seen_are_taken_from_capacity_in_every_cycle():
    """The capacity left by unseen reservations is remembered per view, but only for those reservations."""
    profile = cluster("a", pool(nodes=1))
    view = view_of(profile)
    held = reservation("early", "a", "gpu", "a-gpu-0", gpus=8)
    assert decide(view, [request(gpus=1)], [held], Policy(), NOW).decisions[0].outcome is Outcome.WAITING
    assert decide(view, [request(gpus=1)], [], Policy(), NOW).decisions[0].outcome is Outcome.ADMITTED
    assert decide(view, [request(gpus=1)], [held], Policy(), NOW).decisions[0].outcome is Outcome.WAITING


@pytest.mark.parametrize("queues", [2, 1], ids=["made again", "taken over"])
@pytest.mark.parametrize("lasting_too", [False, True], ids=["verdicts and columns kept", "all afresh"])
@pytest.mark.parametrize("policy_name", sorted(POLICIES))
def test_decisions_of_shared_plans_starting_afresh_at_every_cycle_are_equal(
    monkeypatch, policy_name, lasting_too, queues
):
    """Past half `MAX_PLANS` entries the shared plans start afresh (a queue of new all-different
    requests passes it every other cycle), keeping the verdicts and columns they are made of unless
    those pass `MAX_LASTING`, and the plans they replace: what is made again, or taken over from
    those (the same queue the next cycle), decides as what was kept."""
    monkeypatch.setattr(plan_cache, "MAX_PLANS", 0)
    if lasting_too:
        monkeypatch.setattr(plan_cache, "MAX_LASTING", 0)
    rng = random.Random(12)
    policy = POLICIES[policy_name]
    views = [random_view(random.Random(12), reads=random.Random(120 + i)) for i in range(3)]
    in_turn = [random_queue(rng, 25) for _ in range(queues)]
    cycles = [(view, in_turn[i % queues], random_running(rng, view)) for i, view in enumerate((*views, *views))]
    remembered = [decide(view, q, running, policy, NOW) for view, q, running in cycles]
    assert remembered == [_uncached(view, q, running, policy, NOW) for view, q, running in cycles]


def test_stagings_of_new_datasets_are_bounded_and_decide_as_before(monkeypatch):
    """A service meets new dataset paths for as long as it runs: the stagings and holders a view's
    memory keeps start afresh past `MAX_STAGINGS`, and what is worked out again decides the same."""
    monkeypatch.setattr(plan_cache, "MAX_STAGINGS", 5)
    rng = random.Random(7)
    view = random_view(rng)
    queue = [
        request(f"r{i}", gpus=1, data=[{"location": f"runs/2026-12-{i:02d}", "size_gib": 10 * i}]) for i in range(1, 9)
    ]
    policy = Policy()
    result = decide(view, queue, [], policy, NOW)
    memory = plan_cache.plan_memory(view, policy, DEFAULT_PLUGINS)
    assert 0 < len(memory.staging) <= 5 and 0 < len(memory.data_sources) <= 5
    assert result == _uncached(view, queue, [], policy, NOW)
    assert decide(view, queue, [], policy, NOW) == result


def test_plans_starting_afresh_keep_the_verdicts_and_columns_they_are_made_of(monkeypatch):
    """A queue of new all-different requests makes hundreds of plans a cycle from far fewer lasting
    verdicts and static columns: when the plans start afresh, a plan made again takes the verdicts
    and columns made before (the same objects) and the fit verdicts of its demand, and decides as
    one made from nothing. Past one replacement the setups asked for again are taken over as they
    are; past two in a row without them, they are made again."""
    rng = random.Random(5)
    view = random_view(rng)
    queue = random_queue(rng, 12)
    policy = Policy()
    first = decide(view, queue, [], policy, NOW)
    memory = plan_cache.plan_memory(view, policy, DEFAULT_PLUGINS)
    (before,) = memory._shared.values()
    plans = {k: p for k, p in before.plans.items() if k[0] == "plan"}
    fit_memos = dict(memory.fit_memo)
    assert plans and before.lasting and fit_memos
    monkeypatch.setattr(plan_cache, "MAX_PLANS", 0)  # each cycle replaces the shared plans
    assert decide(view, queue, [], policy, NOW) == first
    (taken_over,) = memory._shared.values()
    assert taken_over is not before and taken_over.older is before and taken_over.lasting is before.lasting
    assert taken_over.setups and all(s is before.setups[k] for k, s in taken_over.setups.items())
    other = request("other", gpus=3, kind=WorkKind.BATCH)  # asks for none of the queue's setups
    decide(view, [other], [], policy, NOW)
    assert decide(view, queue, [], policy, NOW) == first == _uncached(view, queue, [], policy, NOW)
    (after,) = memory._shared.values()
    assert after.older is not None and after.older.older is None  # two generations at most
    assert not any(k in after.older.setups for k in before.setups)
    assert after.lasting is before.lasting
    remade = {k: p for k, p in after.plans.items() if k in plans}
    assert remade and all(p is not plans[k] for k, p in remade.items())
    assert all(p.rejections is plans[k].rejections for k, p in remade.items())  # the same lasting verdicts
    assert all(memory.fit_memo.get(k) is m for k, m in fit_memos.items())
