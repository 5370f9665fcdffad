"""Preemption of lower-priority interruptible work: only when it makes the request fit, fewest then cheapest."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from airflow_mcsched.decision import Outcome, Policy, Reason, decide, preemption
from tests.decision.fleet_factory import DEFAULT_POLICY, NOW, cluster, observe, pool, request, reservation, view_of

LOW = 0
HIGH = 1000


def full_fleet(*running, nodes=2):
    profile = cluster("a", pool("gpu", nodes=nodes))
    used: dict[str, int] = {}
    for r in running:
        for a in r.pods:
            used[a.node] = used.get(a.node, 0) + a.gpus
    free = [8 - used.get(f"a-gpu-{i}", 0) for i in range(nodes)]
    return view_of((profile, observe(profile, free={"gpu": free}, seen=[r.id for r in running])))


def low(rid, node, gpus=8, price=2.0, interruptible=True, priority=LOW):
    return reservation(rid, "a", "gpu", node, gpus=gpus, priority=priority, interruptible=interruptible, price=price)


def urgent(rid="urgent", **kw):
    return request(rid, gpus=8, priority_class="high", **kw)


def test_higher_priority_preempts_lower_priority_interruptible_work():
    running = [low("l0", "a-gpu-0"), low("l1", "a-gpu-1", price=1.0)]
    result = decide(full_fleet(*running), [urgent()], running, DEFAULT_POLICY, NOW)
    d = result.decision("urgent")
    assert d.outcome is Outcome.PREEMPTING
    (victim,) = d.victims
    assert victim.reservation_id == "rsv-l1"  # the cheaper of two equally few
    assert victim.reason is Reason.PREEMPTED_BY_PRIORITY and victim.for_request == "urgent"
    assert "priority 0 is below 1000" in victim.message
    assert result.preemptions == d.victims
    assert "l1 (PreemptedByPriority)" in d.summary


def test_fewest_victims_before_cheapest():
    small = [low(f"s{i}", "a-gpu-1", gpus=1, price=0.1) for i in range(8)]
    big = low("big", "a-gpu-0", price=5.0)
    running = [big, *small]
    d = decide(full_fleet(*running), [urgent()], running, DEFAULT_POLICY, NOW).decision("urgent")
    assert [v.reservation_id for v in d.victims] == ["rsv-big"]


def test_work_that_must_not_stop_is_never_a_victim():
    running = [low("l0", "a-gpu-0", interruptible=False), low("l1", "a-gpu-1", interruptible=False)]
    d = decide(full_fleet(*running), [urgent()], running, DEFAULT_POLICY, NOW).decision("urgent")
    assert (d.outcome, d.reason) == (Outcome.WAITING, Reason.WAITING_FOR_CAPACITY)


def test_equal_priority_does_not_preempt():
    running = [low("l0", "a-gpu-0", priority=1000), low("l1", "a-gpu-1", priority=1000)]
    d = decide(full_fleet(*running), [urgent()], running, DEFAULT_POLICY, NOW).decision("urgent")
    assert d.outcome is Outcome.WAITING


def test_no_preemption_when_stopping_the_candidates_would_not_make_room():
    """Only 2 GPUs per node are held by low-priority work; the other 6 by work that must not stop."""
    running = [
        low("keep0", "a-gpu-0", gpus=6, priority=HIGH, interruptible=False),
        low("keep1", "a-gpu-1", gpus=6, priority=HIGH, interruptible=False),
        low("l0", "a-gpu-0", gpus=2),
        low("l1", "a-gpu-1", gpus=2),
    ]
    d = decide(full_fleet(*running), [urgent()], running, DEFAULT_POLICY, NOW).decision("urgent")
    assert d.outcome is Outcome.WAITING and not d.victims


def test_victims_already_stopping_are_waited_for_not_replaced():
    """Next cycle: the victim's pod still shows; the preemptor waits for it instead of choosing more."""
    stopping = reservation("l0", "a", "gpu", "a-gpu-0", gpus=8, priority=LOW, interruptible=True, preempted_by="urgent")
    other = low("l1", "a-gpu-1")
    running = [stopping, other]
    d = decide(full_fleet(*running), [urgent()], running, DEFAULT_POLICY, NOW).decision("urgent")
    assert d.outcome is Outcome.PREEMPTING and d.victims == ()
    assert "waiting on a/gpu for 1 preempted" in d.summary


def test_freed_capacity_is_held_for_the_preemptor_within_the_cycle():
    running = [low("l0", "a-gpu-0"), low("l1", "a-gpu-1")]
    queue = [urgent(), request("later", gpus=8, priority_class="low")]
    result = decide(full_fleet(*running), queue, running, DEFAULT_POLICY, NOW)
    assert result.decision("urgent").outcome is Outcome.PREEMPTING
    assert result.decision("later").outcome is Outcome.WAITING


def test_preemption_can_be_turned_off():
    running = [low("l0", "a-gpu-0"), low("l1", "a-gpu-1")]
    d = decide(full_fleet(*running), [urgent()], running, Policy(preemption=False), NOW).decision("urgent")
    assert d.outcome is Outcome.WAITING


def test_a_short_request_preempts_where_the_backfill_head_refused_a_long_one_alike():
    """Two requests alike in demand and priority but not in duration: the long one may not preempt
    on the node held for the blocked head (it would run past the head's start), the short one may.
    The search "nothing to stop here" was remembered per demand and priority alone, so the short
    one waited too."""
    from datetime import timedelta

    held = low("held", "a-gpu-0", gpus=4, priority=HIGH, interruptible=False)  # ends in an hour
    victims = [low(f"v{i}", "a-gpu-0", gpus=1, priority=LOW) for i in range(4)]  # interruptible
    running = [held, *victims]
    head = urgent("head", arrival=NOW - timedelta(minutes=3))  # 8 GPUs: fits once all that ends
    longer = request("long", gpus=1, priority_class="high", expected_duration=timedelta(hours=10))
    shorter = request("short", gpus=1, priority_class="high", expected_duration=timedelta(minutes=20))
    queue = [head, longer, shorter]

    result = decide(full_fleet(*running, nodes=1), queue, running, DEFAULT_POLICY, NOW)

    assert result.decision("head").outcome is Outcome.WAITING  # stopping the four would not fit 8
    assert result.decision("head").expected_start is not None  # the node is held for it
    assert result.decision("long").outcome is Outcome.WAITING
    d = result.decision("short")
    assert d.outcome is Outcome.PREEMPTING, d.summary
    assert [v.reservation_id for v in d.victims] in ([f"rsv-v{i}"] for i in range(4))
    assert "of short" in d.victims[0].message  # named for this request


def test_a_plan_found_for_an_earlier_request_alike_names_its_victims_for_this_one():
    """Requests alike that each preempt reuse the searches of pools nothing changed in since; the
    victims they stop are still named for the request that stops them."""
    profile = cluster("a", pool("gpu", nodes=1), pool("other", nodes=1))
    running = [
        reservation("cheap", "a", "gpu", "a-gpu-0", gpus=8, priority=LOW, interruptible=True, price=1.0),
        reservation("dear", "a", "other", "a-other-0", gpus=8, priority=LOW, interruptible=True, price=3.0),
    ]
    fleet = view_of((profile, observe(profile, free={"gpu": [0], "other": [0]}, seen=[r.id for r in running])))
    result = decide(fleet, [urgent("first"), urgent("second")], running, DEFAULT_POLICY, NOW)
    first, second = result.decision("first"), result.decision("second")
    assert [(v.reservation_id, v.for_request) for v in first.victims] == [("rsv-cheap", "first")]
    assert [(v.reservation_id, v.for_request) for v in second.victims] == [("rsv-dear", "second")]
    assert "of second" in second.victims[0].message and "of first" in first.victims[0].message


def test_a_request_alike_in_shape_but_bound_to_other_pools_searches_them():
    """Two urgent requests alike in demand, priority and expected duration, one bound to A100s and
    one to H100s, with nothing changing between them: the first finds no work to stop on the A100
    pool (nothing there may stop), the second must still search the H100 pool and preempt there
    (a search remembered for requests alike holds only for the same pools). Without backfill, no
    head is held for the first either, so nothing at all changes between the two searches."""
    profile = cluster("a", pool("a100", nodes=1), pool("h100", "H100", nodes=1))
    running = [
        reservation("keep", "a", "a100", "a-a100-0", gpus=8, priority=LOW, interruptible=False),
        reservation("spot", "a", "h100", "a-h100-0", gpus=8, priority=LOW, interruptible=True, gpu_type="H100"),
    ]
    seen = [r.id for r in running]
    view = view_of((profile, observe(profile, free={"a100": [0], "h100": [0]}, seen=seen)))
    queue = [
        urgent("on-a100", gpu_types=["A100"], arrival=NOW - timedelta(minutes=2)),
        urgent("on-h100", gpu_types=["H100"]),
    ]
    result = decide(view, queue, running, DEFAULT_POLICY.model_copy(update={"backfill": False}), NOW)
    assert result.decision("on-a100").outcome is Outcome.WAITING
    d = result.decision("on-h100")
    assert d.outcome is Outcome.PREEMPTING
    assert [v.reservation_id for v in d.victims] == ["rsv-spot"]


@pytest.mark.parametrize("seed", range(40))
def test_the_gangs_quick_test_skips_only_pools_where_stopping_everything_would_not_do(seed, monkeypatch):
    """Before it builds a pool's capacity with every candidate victim gone, a search for a gang of
    whole GPUs sums the pods its nodes could hold by GPUs alone (`_gpu_slots_once_stopped`). On
    random pools of whole-GPU and shared work, the decision is the one of a search without that
    test."""
    import random

    from airflow_mcsched.decision import plan_cache, preemption
    from airflow_mcsched.view.allocation import NodeAllocation

    rng = random.Random(seed)
    per_node, nodes = rng.choice([4, 8]), rng.randint(2, 4)
    profile = cluster("a", pool("gpu", gpus_per_node=per_node, nodes=nodes))
    running, shares = [], []
    for n in range(nodes):
        free = [1000] * per_node
        for k in range(rng.randint(1, 3)):
            whole = [i for i, m in enumerate(free) if m == 1000]
            if not whole:
                break
            if rng.random() < 0.3:  # a share of one GPU
                i = rng.choice(whole)
                pod = NodeAllocation(f"a-gpu-{n}", 0, 500, 1000, 4096, (i,))
                free[i] -= 500
            else:
                held = tuple(whole[: rng.randint(1, len(whole))])
                pod = NodeAllocation(f"a-gpu-{n}", len(held), 0, 1000, 4096, held)
                for i in held:
                    free[i] = 0
            r = low(f"w{n}-{k}", f"a-gpu-{n}", interruptible=rng.random() < 0.7, priority=rng.choice([LOW, HIGH * 2]))
            running.append(dataclasses.replace(r, pods=(pod,)))
        shares.append(free)
    view = view_of((profile, observe(profile, shares={"gpu": shares}, seen=[r.id for r in running])))
    gpus = rng.choice([1, 2, per_node // 2, per_node])
    gang = request("gang", gpus=gpus, pods=rng.randint(2, 3), priority_class="high")
    quick = decide(view, [gang], running, DEFAULT_POLICY, NOW).decision("gang")
    plan_cache.forget_all()
    monkeypatch.setattr(preemption._PoolSearch, "_might_fit_without_all", lambda self: True)
    assert decide(view, [gang], running, DEFAULT_POLICY, NOW).decision("gang") == quick


def _shared_gpu_fleet(shares_on_last_gpu: list[tuple[str, int, int]]):
    """One 4-GPU node: GPUs 0-2 held by work that cannot be stopped, GPU 3 by shares (id, milli, priority)."""
    from airflow_mcsched.view.allocation import NodeAllocation

    profile = cluster("a", pool("gpu", gpus_per_node=4, nodes=1))
    kept = low("kept", "a-gpu-0", gpus=3, interruptible=False, priority=HIGH * 2)
    running = [dataclasses.replace(kept, pods=(NodeAllocation("a-gpu-0", 3, 0, 1000, 4096, (0, 1, 2)),))]
    for rid, milli, priority in shares_on_last_gpu:
        r = low(rid, "a-gpu-0", gpus=0, priority=priority)
        running.append(dataclasses.replace(r, pods=(NodeAllocation("a-gpu-0", 0, milli, 1000, 4096, (3,)),)))
    left = 1000 - sum(milli for _, milli, _ in shares_on_last_gpu)
    view = view_of((profile, observe(profile, shares={"gpu": [[0, 0, 0, left]]}, seen=[r.id for r in running])))
    return view, running


def test_a_whole_gpu_is_freed_by_stopping_every_share_on_it():
    """Shares of one GPU, once all stopped, leave it whole: a request for a whole GPU stops them
    (and only as many as it takes), which a count of whole GPUs alone would never find."""
    view, running = _shared_gpu_fleet([("s1", 300, LOW), ("s2", 200, LOW)])
    d = decide(view, [request("whole", gpus=1, priority_class="high")], running, DEFAULT_POLICY, NOW).decision("whole")
    assert d.outcome is Outcome.PREEMPTING
    assert sorted(v.reservation_id for v in d.victims) == ["rsv-s1", "rsv-s2"]
    # one share it may not stop (higher priority) keeps the GPU from ever being whole: it waits
    view, running = _shared_gpu_fleet([("s1", 300, LOW), ("s2", 200, HIGH * 2)])
    d = decide(view, [request("whole", gpus=1, priority_class="high")], running, DEFAULT_POLICY, NOW).decision("whole")
    assert d.outcome is Outcome.WAITING and not d.victims


def test_a_search_that_found_nothing_is_made_again_when_the_pools_victims_change():
    """Searches that found nothing to stop are kept across cycles with the pool's capacity object and
    what its victims are. Here the next read shows the pool just as full (one capacity object per
    content, so the very same object), but the work that must not stop has ended and interruptible
    work holds its GPUs: stopping both now makes room, and the request preempts."""
    keep = low("keep", "a-gpu-0", gpus=4, interruptible=False)
    spot = low("spot", "a-gpu-0", gpus=4)
    first = full_fleet(keep, spot, nodes=1)
    waits = decide(first, [urgent()], [keep, spot], DEFAULT_POLICY, NOW).decision("urgent")
    assert (waits.outcome, waits.victims) == (Outcome.WAITING, ())

    other = low("other", "a-gpu-0", gpus=4)
    second = full_fleet(other, spot, nodes=1)
    assert second.pool("a", "gpu").capacity is first.pool("a", "gpu").capacity  # nothing else tells them apart
    d = decide(second, [urgent()], [other, spot], DEFAULT_POLICY, NOW).decision("urgent")
    assert d.outcome is Outcome.PREEMPTING, d.summary
    assert sorted(v.reservation_id for v in d.victims) == ["rsv-other", "rsv-spot"]


def test_a_search_a_backfill_head_refused_is_made_again_in_the_next_cycle():
    """A head's hold refused what stopping work would have made room for: that search found nothing
    in its cycle only. In the next cycle, with no head held there, the same request preempts."""
    held = low("held", "a-gpu-0", gpus=4, priority=HIGH, interruptible=False)  # ends in an hour
    victims = [low(f"v{i}", "a-gpu-0", gpus=1, priority=LOW) for i in range(4)]
    running = [held, *victims]
    view = full_fleet(*running, nodes=1)
    head = urgent("head", arrival=NOW - timedelta(minutes=3))
    longer = request("long", gpus=1, priority_class="high", expected_duration=timedelta(hours=10))
    first = decide(view, [head, longer], running, DEFAULT_POLICY, NOW)
    assert first.decision("head").expected_start is not None
    assert first.decision("long").outcome is Outcome.WAITING

    d = decide(view, [longer], running, DEFAULT_POLICY, NOW).decision("long")
    assert d.outcome is Outcome.PREEMPTING, d.summary


def test_pools_whose_best_conceivable_plan_ranks_after_the_best_found_are_not_searched(monkeypatch):
    """A plan stops one victim at least, costing at least the pool's cheapest: a pool whose cheapest
    victim already ranks after the best plan found is not searched, and the choice is the same.
    In fleet order: p0 stops one victim for $24/h; p1 two for $4/h (cheaper, but more victims); p2
    one for $16/h, the best; p3 one for $16/h too, but after p2 in fleet order: not searched."""
    from airflow_mcsched.decision import preemption

    profile = cluster("a", *(pool(f"p{i}", nodes=1) for i in range(4)))
    running = [
        reservation("p0", "a", "p0", "a-p0-0", gpus=8, priority=LOW, interruptible=True, price=3.0),
        reservation("p1-x", "a", "p1", "a-p1-0", gpus=4, priority=LOW, interruptible=True, price=0.5),
        reservation("p1-y", "a", "p1", "a-p1-0", gpus=4, priority=LOW, interruptible=True, price=0.5),
        reservation("p2", "a", "p2", "a-p2-0", gpus=8, priority=LOW, interruptible=True, price=2.0),
        reservation("p3", "a", "p3", "a-p3-0", gpus=8, priority=LOW, interruptible=True, price=2.0),
    ]
    free = {f"p{i}": [0] for i in range(4)}
    fleet = view_of((profile, observe(profile, free=free, seen=[r.id for r in running])))
    searched = []
    search = preemption._PoolSearch.plan

    def counted(self):
        searched.append(self.pool.name)
        return search(self)

    monkeypatch.setattr(preemption._PoolSearch, "plan", counted)
    d = decide(fleet, [urgent()], running, DEFAULT_POLICY, NOW).decision("urgent")
    assert d.outcome is Outcome.PREEMPTING
    assert [v.reservation_id for v in d.victims] == ["rsv-p2"]
    assert sorted(searched) == ["p0", "p1", "p2"]


def test_requests_sharing_a_walk_search_the_pools_it_found_once_across_cycles(monkeypatch):
    """Urgent requests alike wait where stopping work would not make room: the second takes the first
    one's walk, and so does the next cycle's first; each takes the pools to search with the walk,
    not picked from its rejections again."""
    from airflow_mcsched.decision import preemption

    running = [
        low("keep0", "a-gpu-0", gpus=6, priority=HIGH, interruptible=False),
        low("keep1", "a-gpu-1", gpus=6, priority=HIGH, interruptible=False),
        low("l0", "a-gpu-0", gpus=2),
        low("l1", "a-gpu-1", gpus=2),
    ]
    view = full_fleet(*running)
    queue = [urgent(arrival=NOW - timedelta(seconds=1)), urgent("urgent-2", arrival=NOW)]
    searched = []
    search = preemption._remembered_best
    monkeypatch.setattr(
        preemption, "_remembered_best", lambda ctx, pools, memo: searched.append(pools) or search(ctx, pools, memo)
    )
    for _ in range(2):
        assert [d.outcome for d in decide(view, queue, running, DEFAULT_POLICY, NOW).decisions] == [Outcome.WAITING] * 2
    assert len(searched) == 4 and [p.name for p in searched[0]] == ["gpu"]
    assert searched[1] is searched[2] is searched[3]  # the first request walked itself: its own list


def test_victims_kept_across_cycles_are_those_of_a_fresh_engine_when_the_pools_work_changes(fresh_memory):
    """A pool's candidate victims at a priority are kept from cycle to cycle while its work is the
    same objects (preemption.py, `PlanMemory.below`). When a victim is already stopping, or runs at a
    higher priority now, the next cycle finds the others, as an engine that remembers nothing does."""
    from airflow_mcsched.decision import plan_cache

    v1, v2 = low("v1", "a-gpu-0", gpus=4, price=1.0), low("v2", "a-gpu-0", gpus=4, price=3.0)
    v3 = low("v3", "a-gpu-1", gpus=8, price=2.0)
    stopping = dataclasses.replace(v3, preempted_by="someone-else")
    above = dataclasses.replace(v3, priority=HIGH)
    cycles = [[v1, v2, v3], [v1, v2, v3], [v1, v2, stopping], [v1, v2, above], [v1, v2, v3]]
    view = full_fleet(v1, v2, v3)

    def victims(running):
        d = decide(view, [urgent()], running, DEFAULT_POLICY, NOW).decision("urgent")
        assert d.outcome is Outcome.PREEMPTING, d.summary
        return sorted(v.reservation_id for v in d.victims)

    kept = [victims(running) for running in cycles]
    fresh = []
    for running in cycles:
        plan_cache.forget_all()
        fresh.append(victims(running))
    assert kept == fresh
    assert kept == [["rsv-v3"], ["rsv-v3"], ["rsv-v1", "rsv-v2"], ["rsv-v1", "rsv-v2"], ["rsv-v3"]]


def test_victims_found_after_the_cycle_changed_a_pools_work_are_not_kept_for_later_cycles(monkeypatch, fresh_memory):
    """A small job takes the last room in the pool; the urgent request after it searches that pool,
    whose work is now the cycle's own: the victims it finds there are its alone, never kept for later
    cycles (`PlanMemory.below` keeps victims found on work that no cycle had changed yet)."""
    running = [low("spot", "a-gpu-0"), low("keep", "a-gpu-1", gpus=6, priority=HIGH, interruptible=False)]
    queue = [
        request("small", gpus=2, priority_class="high", arrival=NOW - timedelta(minutes=2)),
        urgent(arrival=NOW - timedelta(minutes=1)),
    ]
    kept_from = []
    keep = preemption.kept_for
    monkeypatch.setattr(
        preemption, "kept_for", lambda table, key, work, *a: kept_from.append(work) or keep(table, key, work, *a)
    )
    result = decide(full_fleet(*running), queue, running, DEFAULT_POLICY, NOW)
    assert result.decision("small").outcome is Outcome.ADMITTED
    assert [v.reservation_id for v in result.decision("urgent").victims] == ["rsv-spot"]
    assert kept_from == []  # the pool's only search came after the grant
    again = decide(full_fleet(*running), [urgent()], running, DEFAULT_POLICY, NOW)
    assert [v.reservation_id for v in again.decision("urgent").victims] == ["rsv-spot"]
    assert [{r.id for r in work} for work in kept_from] == [{"rsv-spot", "rsv-keep"}]


def _alike_after_changes(seed: int, monkeypatch) -> tuple[list, list]:
    """Urgent requests alike on a fleet of six full pools, between which others are admitted or
    preempt (changing a few pools): the cycle's decisions, those of a cycle where every request
    searches every pool without remembering anything."""
    import random

    from airflow_mcsched.decision import plan_cache, preemption

    rng = random.Random(seed)
    pools = [pool(f"p{i}", nodes=2) for i in range(6)]
    profile = cluster("a", *pools)
    running, free = [], {}
    for p in pools:
        free[p.name] = []
        for n in range(2):
            used, busy = 0, 8 - rng.choice([0, 0, 2, 4])  # room for small requests on some nodes
            for k in range(rng.randint(1, 3)):
                gpus = min(rng.choice([2, 4, 8]), busy - used)
                if not gpus:
                    break
                rid = f"{p.name}-{n}-{k}"
                running.append(
                    reservation(
                        rid, "a", p.name, f"a-{p.name}-{n}", gpus=gpus, priority=rng.choice([LOW, HIGH * 2]),
                        interruptible=rng.random() < 0.5, price=rng.choice([1.0, 2.0, 3.0]),
                    )
                )  # fmt: skip
                used += gpus
            free[p.name].append(8 - used)
    view = view_of((profile, observe(profile, free=free, seen=[r.id for r in running])))
    queue = []
    for i in range(16):
        if rng.random() < 0.5:
            queue.append(urgent(f"u{i}", arrival=NOW - timedelta(minutes=30 - i)))
        else:
            queue.append(
                request(
                    f"s{i}", gpus=rng.choice([1, 2]), priority_class="high", arrival=NOW - timedelta(minutes=30 - i)
                )
            )
    policy = Policy(backfill=seed % 2 == 0, backfill_heads=3)
    best_plan = preemption._best_plan
    plan_cache.forget_all()
    remembering = list(decide(view, queue, running, policy, NOW).decisions)
    plan_cache.forget_all()
    monkeypatch.setattr(preemption, "_remembered_best", lambda ctx, pools, memo: best_plan(ctx, pools, None, False))
    alone = list(decide(view, queue, running, policy, NOW).decisions)
    return remembering, alone


@pytest.mark.parametrize("seed", range(24))
def test_requests_alike_that_take_what_earlier_searches_found_decide_as_if_each_searched_alone(seed, monkeypatch):
    """Requests alike take the last one's answer when nothing changed since, and each pool's search
    while its capacity and work are the same (`_remembered_best`): the cycle decides as one where
    every request searches every pool without remembering anything."""
    remembering, alone = _alike_after_changes(seed, monkeypatch)
    assert remembering == alone
    if seed == 0:
        assert [d.outcome for d in remembering].count(Outcome.PREEMPTING) >= 1
