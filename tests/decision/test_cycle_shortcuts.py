"""The shortcuts of a cycle over a long queue change how fast it decides, never what it decides.

- a request of a demand that an earlier request found fitting no pool of the same eligible pools,
  on the same capacity objects (in its cycle, or in an earlier one that reached the same capacity
  state), takes that request's rejections instead of walking the fleet again;
- the backfill replay of running work follows only the nodes that ends touch until the request
  may fit (`backfill._PoolReplay`);
- a pool's search for work to preempt is reused by later requests alike (demand, priority, expected
  duration) while nothing it read changed, and so is a whole search over the same pools while none
  of them changed; a pool's candidate victims are kept per priority while its work is
  unchanged, with what single-pod searches derive from them (`preemption._search_memo`,
  `preemption._below_in_pool`);
- backfill's replay gives back what ends at one instant node by node at once.

Each is checked against the engine with the shortcut turned off, on random fleets and queues.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from airflow_mcsched.decision import (
    Outcome,
    Policy,
    admission,
    backfill,
    candidates,
    decide,
    plan_cache,
    pool_judgement,
    pool_ranking,
    preemption,
)
from airflow_mcsched.decision.admission import DEFAULT_PLUGINS, AdmissionCycle
from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.cycle_state import CycleState
from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.decision.reasons import Reason
from tests.decision.fleet_factory import NOW, cluster, observe, pool, request, reservation, view_of
from tests.decision.test_plan_cache import POLICIES, random_queue, random_running, random_view

pytestmark = pytest.mark.usefixtures("fresh_memory")


def _full_replay_may_fit(self) -> bool:
    self._touched = set()
    return True  # every end is followed by a full check of the pool, as before the shortcut


def _cycles(seed: int):
    rng = random.Random(seed)
    view = random_view(rng)
    # long queues of few shapes: most requests wait behind full pools
    return view, [
        (random_queue(rng, 60), random_running(rng, view), NOW + timedelta(seconds=s)) for s in (0, 30, 30, 90)
    ]


def _busy_cycles(seed: int):
    """Every GPU of the fleet taken by one-GPU work, most of it interruptible and of low priority, and
    long queues of few shapes and durations above it: most requests preempt or wait behind a head."""
    rng = random.Random(seed)
    view = random_view(rng)
    running = []
    for p in view.pools:
        for node in p.capacity.nodes if p.gpu_type else ():
            for i in range(node.whole_gpus_free):
                running.append(
                    reservation(
                        f"{node.name}-{i}", p.cluster, p.name, node.name, gpu_type=p.gpu_type,
                        priority=rng.choice([0, 0, 100]), interruptible=rng.random() < 0.8,
                        price=rng.choice([1.0, 2.0]), ends_in=timedelta(minutes=rng.choice([30, 120])),
                    )
                )  # fmt: skip
    shapes = [{"gpus": 1}, {"gpus": 2}, {"gpus": 4}, {"gpus": 8}, {"gpus": 8, "pods": 2}]
    queue = [
        request(
            f"q{i}", team=rng.choice(["ml", "vision"]), priority_class=rng.choice(["normal", "high"]),
            expected_duration=timedelta(minutes=rng.choice([20, 600])), arrival=NOW - timedelta(seconds=60 - i),
            **rng.choice(shapes),
        )
        for i in range(60)
    ]  # fmt: skip
    return view, [(queue, running, NOW), (queue, running, NOW + timedelta(seconds=30))]


def _fresh_victims_below(ctx, pool):
    ctx.cycle.victims_below.clear()  # as before the shortcut: every search lists the pool's work
    return _victims_below(ctx, pool)


_victims_below = preemption._below_in_pool


@pytest.mark.parametrize("fleet", ["random", "busy"])
@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(5))
def test_decisions_with_and_without_the_shortcuts_are_equal(seed, policy_name, fleet, monkeypatch):
    policy = POLICIES[policy_name]
    view, cycles = _cycles(seed) if fleet == "random" else _busy_cycles(seed)
    fast = [decide(view, q, running, policy, now) for q, running, now in cycles]
    plan_cache.forget_all()
    with monkeypatch.context() as m:
        m.setattr(candidates, "_fits_nowhere_key", lambda ctx, setup: None)
        m.setattr(backfill._PoolReplay, "may_fit", _full_replay_may_fit)
        m.setattr(preemption, "_search_memo", lambda ctx, own: None)
        m.setattr(preemption, "_below_in_pool", _fresh_victims_below)
        slow = [decide(view, q, running, policy, now) for q, running, now in cycles]
    assert fast == slow


def test_the_busy_fleets_make_requests_preempt_and_wait_behind_heads():
    """What the busy case of the test above must exercise: many preemptions, and heads held."""
    outcomes = []
    for seed in range(5):
        view, cycles = _busy_cycles(seed)
        for q, running, now in cycles:
            outcomes += [
                (d.outcome, d.expected_start is not None) for d in decide(view, q, running, Policy(), now).decisions
            ]
    assert sum(o is Outcome.PREEMPTING for o, _ in outcomes) >= 30
    assert sum(held for _, held in outcomes) >= 5


def test_requests_that_fit_nowhere_share_one_walk_until_capacity_changes(monkeypatch):
    """Three one-GPU requests wait on a full pool: the second and third reuse the first's rejections
    (same objects); after a grant frees nothing but changes capacity, a request walks again. The
    next cycle on the view walks nowhere: it reaches the same capacity states."""
    profile = cluster("a", pool("gpu", "A100", nodes=1), pool("cpu", None, nodes=1))
    view = view_of((profile, observe(profile, free={"gpu": [0]})))
    queue = [request(f"r{i}", gpus=1, arrival=NOW - timedelta(seconds=10 - i)) for i in range(3)]
    queue.append(request("cpu-job", cpu=1, arrival=NOW - timedelta(seconds=5)))
    queue.append(request("r-late", gpus=1, arrival=NOW))
    cycle = AdmissionCycle(view, [], Policy(backfill=False), NOW)
    result = cycle.run(queue)
    by_id = {d.request_id: d for d in result.decisions}
    assert [by_id[f"r{i}"].outcome for i in range(3)] == [Outcome.WAITING] * 3
    assert by_id["cpu-job"].outcome is Outcome.ADMITTED
    first, second, third = (by_id[f"r{i}"] for i in range(3))
    assert second.rejections == first.rejections and third.rejections is second.rejections
    assert by_id["r-late"].rejections == first.rejections  # equal, but walked again after the grant
    assert by_id["r-late"].rejections is not first.rejections
    assert len(cycle.state.memory.fits_nowhere) == 2  # one walk per capacity state
    # the next cycle reaches the same capacity states: every request takes a walk kept from this one
    walks = []
    for name in ("_scan", "_rescan"):  # a walk of every pool, or again where capacity changed
        walk = getattr(candidates, name)
        monkeypatch.setattr(candidates, name, lambda ctx, *a, walk=walk: walks.append(ctx.request.id) or walk(ctx, *a))
    again = {d.request_id: d for d in AdmissionCycle(view, [], Policy(backfill=False), NOW).run(queue).decisions}
    assert walks == []
    assert again["r0"].rejections is second.rejections  # and the parts worked out from them
    assert [again[r.id] for r in queue] == [by_id[r.id] for r in queue]


def test_requests_that_a_head_keeps_out_share_one_walk_while_the_heads_and_their_end_are_the_same():
    """A large request waits for a node and is held room on it; one-pool small requests alike fit now
    but would run past its start: the first is walked, the second takes its rejections (the same
    objects); one alike that would end at another time is walked on its own, and after a grant
    commits to the head a request alike walks again. Each decision is the one made with nothing
    remembered."""
    profile = cluster("a", pool("gpu", "A100", nodes=1))
    running = [reservation("busy", "a", "gpu", "a-gpu-0", gpus=4, ends_in=timedelta(hours=1))]
    view = view_of((profile, observe(profile, free={"gpu": [4]}, seen=["rsv-busy"])))
    long = timedelta(hours=3)
    queue = [request("big", gpus=8, expected_duration=long, arrival=NOW - timedelta(seconds=20))]
    queue += [
        request(f"r{i}", gpus=2, expected_duration=long, arrival=NOW - timedelta(seconds=10 - i)) for i in range(2)
    ]
    queue.append(request("r-longer", gpus=2, expected_duration=2 * long, arrival=NOW - timedelta(seconds=5)))
    queue.append(request("short", gpus=1, expected_duration=timedelta(minutes=30), arrival=NOW - timedelta(seconds=4)))
    queue.append(request("r-late", gpus=2, expected_duration=long, arrival=NOW))
    cycle = AdmissionCycle(view, running, Policy(), NOW)
    by_id = {d.request_id: d for d in cycle.run(queue).decisions}
    assert by_id["big"].expected_start == NOW + timedelta(hours=1)
    assert by_id["short"].outcome is Outcome.ADMITTED  # it ends before the head starts
    behind = [by_id[r] for r in ("r0", "r1", "r-longer", "r-late")]
    assert [d.reason for d in behind] == [Reason.WAITING_BEHIND_HEAD] * 4
    assert behind[1].rejections is behind[0].rejections
    assert behind[2].rejections == behind[0].rejections and behind[2].rejections is not behind[0].rejections
    assert behind[3].rejections == behind[0].rejections and behind[3].rejections is not behind[0].rejections
    plan_cache.forget_all()
    assert [by_id[r.id] for r in queue] == list(decide(view, queue, running, Policy(), NOW).decisions)


def test_a_request_waiting_again_judges_only_the_pools_whose_capacity_changed(monkeypatch):
    """A request that fit nowhere is scanned again in the next cycle on a new read where one full
    pool reads differently: the other pools' rejections are taken from the last scan (their capacity
    objects are the same), that pool alone is judged again, and the decision is the one made with
    nothing remembered."""
    profile = cluster("a", pool("p1", "A100", nodes=1), pool("p2", "A100", nodes=1), pool("p3", "A100", nodes=1))
    full = {"p1": [0], "p2": [0], "p3": [0]}
    queue = [request("r", gpus=1)]
    first = decide(view_of((profile, observe(profile, free=full))), queue, [], Policy(), NOW)
    assert first.decisions[0].outcome is Outcome.WAITING
    judged = []
    judge = candidates._fit_rejection
    monkeypatch.setattr(
        candidates,
        "_fit_rejection",
        lambda ctx, setup, c, p, cap: judged.append(p.name) or judge(ctx, setup, c, p, cap),
    )
    moved = view_of((profile, observe(profile, free=full, cpu_free={"p2": [17]})))
    again = decide(moved, queue, [], Policy(), NOW)
    assert judged == ["p2"]
    assert again.decisions[0].outcome is Outcome.WAITING
    assert [r.pool for r in again.decisions[0].rejections] == ["p1", "p2", "p3"]
    plan_cache.forget_all()
    assert again == decide(moved, queue, [], Policy(), NOW)


def test_a_request_waiting_again_is_worded_from_its_last_scan_with_the_pools_judged_again_in_place(monkeypatch):
    """A waiting request's rejections and tally are made from its last cycle's where only some pools
    were judged again: each such pool's rejection goes in its place in fleet order (after a lasting
    rejection of another GPU type, which shifts the places), and the tally is counted again only
    when a reason changed. Each cycle's decision is the one made with nothing remembered."""
    profile = cluster(
        "a",
        pool("p1", "A100", nodes=1),
        pool("odd", "H100", nodes=1),
        pool("p2", "A100", nodes=1),
        pool("p3", "A100", nodes=1),
    )
    queue = [request("r", gpus=1, cpu=4, gpu_types=("A100",))]
    full = {"p1": [0], "p2": [0], "p3": [0]}
    worded = []
    again = admission._parts_again
    monkeypatch.setattr(admission, "_parts_again", lambda e, *earlier: worded.append(e.rejudged) or again(e, *earlier))
    reads = [
        observe(profile, free=full),  # every A100 pool full
        observe(profile, free={**full, "p2": [1]}, cpu_free={"p2": [2]}),  # p2: GPU free, too little CPU
        observe(profile, free={**full, "p2": [1]}, cpu_free={"p2": [3]}),  # p2: the same reason, another figure
    ]
    decisions = []
    for read in reads:
        view = view_of((profile, read))
        kept = decide(view, queue, [], Policy(), NOW)
        with plan_cache.set_aside():
            assert kept == decide(view, queue, [], Policy(), NOW)
        decisions.append(kept.decisions[0])
    assert worded == [[1], [1]]  # p2 alone: the second eligible pool, the third rejection
    first, changed, same_reason = decisions
    assert [r.pool for r in changed.rejections] == ["p1", "odd", "p2", "p3"]
    assert changed.rejections[2].reason is Reason.INSUFFICIENT_CPU
    assert changed.rejections[2].message.endswith("the most free on one node is 2")
    assert same_reason.rejections[2].message.endswith("the most free on one node is 3")
    assert [r.reason for r in same_reason.rejections] == [r.reason for r in changed.rejections]
    assert "1 x InsufficientCpu" in changed.summary and "1 x InsufficientCpu" not in first.summary


def test_a_ranking_start_whose_pools_mostly_changed_capacity_is_left_without_working_out_its_order(monkeypatch):
    """A later cycle's ranking starts from where the last one left off when its pools kept their
    capacity objects; on a read where every pool it judged reads differently it starts afresh, and
    the kept start's order (a sort of the plan's pools) is not worked out at all."""
    profile = cluster("a", pool("p1", nodes=1), pool("p2", nodes=1), pool("p3", nodes=1))
    queue = [request("r", gpus=1)]
    worked_out = []
    state = pool_ranking.RankingStart.state
    monkeypatch.setattr(
        pool_ranking.RankingStart,
        "state",
        lambda start, ctx, setup: worked_out.append(start) or state(start, ctx, setup),
    )
    view = view_of((profile, observe(profile)))
    decide(view, queue, [], Policy(), NOW)
    decide(view, queue, [], Policy(), NOW)  # the same capacity: starts where the first left off
    assert len(worked_out) == 1
    moved = view_of((profile, observe(profile, cpu_free={"p1": [17], "p2": [17], "p3": [17]})))
    kept = decide(moved, queue, [], Policy(), NOW)
    assert len(worked_out) == 1
    assert kept.decisions[0].outcome is Outcome.ADMITTED
    with plan_cache.set_aside():
        assert kept == decide(moved, queue, [], Policy(), NOW)


def test_pools_to_search_for_work_to_stop_are_taken_again_only_while_each_is_ruled_out_as_before():
    """A waiting request's pools ruled out for room are kept with its scan; its next scan takes them
    again only where each pool judged again is ruled out for room (or not) as before: here one
    comes to fit, and a backfill head holds it, which no preemption in it can help."""
    profile = cluster("a", pool("p1", nodes=1), pool("p2", nodes=1))
    r = request("r", gpus=1, expected_duration=timedelta(hours=4))
    full = view_of((profile, observe(profile, free={"p1": [0], "p2": [0]})))
    first = CycleState(full, {}, Policy(), NOW, DEFAULT_PLUGINS)
    ctx = RequestContext.of(r, 0, first)
    waited = candidates.evaluate(ctx, DEFAULT_PLUGINS.filters, DEFAULT_PLUGINS.scores, want=4)
    assert [p.name for p in preemption._preemptable_pools(ctx, waited)] == ["p1", "p2"]

    freed = view_of((profile, observe(profile, free={"p1": [0], "p2": [8]})))
    second = CycleState(freed, {}, Policy(), NOW, DEFAULT_PLUGINS)
    p2 = freed.pools_by_key[("a", "p2")]
    big = request("big", gpus=8)
    head = backfill.HeadReservation("big", p2, NOW + timedelta(minutes=1), Demand.of(big), second.overlay.capacity(p2))
    second.head = backfill.HeldRoom([head])
    ctx = RequestContext.of(r, 0, second)
    again = candidates.evaluate(ctx, DEFAULT_PLUGINS.filters, DEFAULT_PLUGINS.scores, want=4)
    assert again.before is waited.judged and list(again.rejudged) == [1]
    assert [x.reason for _, x in again.judged] == [Reason.INSUFFICIENT_FREE_GPUS, Reason.WAITING_BEHIND_HEAD]
    ruled_out = preemption._preemptable_pools(ctx, again)
    assert [p.name for p in ruled_out] == ["p1"]

    moved = view_of((profile, observe(profile, free={"p1": [0], "p2": [8]}, cpu_free={"p1": [17]})))
    third = CycleState(moved, {}, Policy(), NOW, DEFAULT_PLUGINS)
    third.head = backfill.HeldRoom([head])
    ctx = RequestContext.of(r, 0, third)
    later = candidates.evaluate(ctx, DEFAULT_PLUGINS.filters, DEFAULT_PLUGINS.scores, want=4)
    assert list(later.rejudged) == [0, 1]  # p1's capacity changed; p2 names a head, judged every time
    assert preemption._preemptable_pools(ctx, later) is ruled_out  # each ruled out as before: taken again


def test_requests_of_one_demand_with_other_scores_share_the_pools_fit_verdicts(monkeypatch):
    """Two requests of one shape and different durations are scored apart (`whole_nodes` reads the
    duration), but whether a pool takes them, and on which nodes, reads the shape and the capacity
    alone: the second judges again only the pool the first was granted in."""
    profile = cluster("a", *(pool(f"p{i}", nodes=2) for i in range(4)))
    view = view_of((profile, observe(profile, free={f"p{i}": [2, 1] for i in range(4)})))
    queue = [
        request("short", gpus=1, expected_duration=timedelta(hours=1), arrival=NOW - timedelta(seconds=2)),
        request("long", gpus=1, expected_duration=timedelta(hours=4), arrival=NOW - timedelta(seconds=1)),
    ]
    judged: dict[str, set[str]] = {"short": set(), "long": set()}
    check = pool_judgement._fit_filters_rejection
    monkeypatch.setattr(
        pool_judgement,
        "_fit_filters_rejection",
        lambda ctx, setup, c, p, cap: judged[ctx.request.id].add(p.name) or check(ctx, setup, c, p, cap),
    )
    kept = decide(view, queue, [], Policy(), NOW)
    first = kept.decisions[0]
    assert first.request_id == "short" and first.outcome is Outcome.ADMITTED
    assert len(judged["short"]) >= 2
    assert judged["long"] <= {first.placement.pool}
    with plan_cache.set_aside():
        assert kept == decide(view, queue, [], Policy(), NOW)


def test_requests_that_fit_nowhere_take_their_own_plans_lasting_rejections():
    """Plans with no eligible pool all find one empty list of pools walked: requests of one demand
    for two GPU types found nowhere each say what was wrong with theirs, however they interleave,
    in this cycle and the next."""
    profile = cluster("a", pool("gpu", "A100", nodes=1))
    view = view_of((profile, observe(profile)))
    queue = [
        request(f"r{i}", gpus=1, gpu_types=(gpu,), arrival=NOW - timedelta(seconds=10 - i))
        for i, gpu in enumerate(["B200", "B200", "MI300", "MI300", "B200", "MI300"])
    ]
    for _ in range(2):
        for d in decide(view, queue, [], Policy(), NOW).decisions:
            wanted = next(r.gpu_types[0] for r in queue if r.id == d.request_id)
            assert d.outcome is Outcome.WAITING and len(d.rejections) == 1
            assert wanted in d.rejections[0].message, d


def test_requests_alike_waiting_on_the_same_pools_share_one_search_for_work_to_stop(monkeypatch):
    """Urgent requests alike find nothing to stop on a pool of work that may not stop. A grant in
    another pool (the CPU job) changes nothing they read, so the first's whole search serves the
    next ones; a grant in the pool they search (the small GPU job) makes the last search again."""
    profile = cluster("a", pool("gpu", "A100", nodes=2), pool("cpu", None, nodes=1))
    running = [
        reservation("keep", "a", "gpu", "a-gpu-0", gpus=8, priority=0),
        reservation("spot", "a", "cpu", "a-cpu-0", gpus=0, priority=0, interruptible=True, gpu_type=None),
    ]  # the interruptible work elsewhere makes a search worth starting
    view = view_of((profile, observe(profile, free={"gpu": [0, 4]}, seen=[r.id for r in running])))

    def urgent(rid: str, seconds_ago: int):
        return request(rid, gpus=8, priority_class="high", arrival=NOW - timedelta(seconds=seconds_ago))

    queue = [
        *(urgent(f"u{i}", 20 - i) for i in range(2)),
        request("cpu-job", cpu=1, priority_class="high", arrival=NOW - timedelta(seconds=15)),
        urgent("u-after-cpu", 14),
        request("small", gpus=2, priority_class="high", arrival=NOW - timedelta(seconds=10)),
        urgent("u-after-small", 5),
    ]
    searches = []
    whole_search = preemption._best_plan
    monkeypatch.setattr(
        preemption, "_best_plan", lambda ctx, *a: searches.append(ctx.request.id) or whole_search(ctx, *a)
    )
    result = decide(view, queue, running, Policy(backfill=False), NOW)
    assert [d.outcome for d in result.decisions if d.request_id.startswith("u")] == [Outcome.WAITING] * 4
    assert result.decision("cpu-job").outcome is Outcome.ADMITTED
    assert result.decision("small").outcome is Outcome.ADMITTED
    assert result.decision("small").placement.pool == "gpu"
    assert searches == ["u0", "u-after-small"]


def test_a_head_waits_for_the_node_whose_work_ends_first_that_fits_it():
    """Ends on nodes too small for the head do not make it fit; the first end that frees a node it
    fits on is its start, whichever node that is."""
    profile = cluster("a", pool("gpu", "A100", nodes=2))
    view = view_of((profile, observe(profile)))  # the running work below is not seen yet: taken from it
    nodes = [n.name for n in view.pool("a", "gpu").capacity.nodes]
    running = [
        reservation("short-half", "a", "gpu", nodes[0], gpus=4, ends_in=timedelta(minutes=5)),
        reservation("long-half", "a", "gpu", nodes[0], gpus=4, ends_in=timedelta(minutes=50)),
        reservation("mid-whole", "a", "gpu", nodes[1], gpus=8, ends_in=timedelta(minutes=20)),
    ]
    result = decide(view, [request("big", gpus=8)], running, Policy(), NOW)
    decision = result.decisions[0]
    assert decision.outcome is Outcome.WAITING
    assert decision.expected_start == NOW + timedelta(minutes=20)
