"""The running work's indexes are kept from cycle to cycle and made again only for the pools whose
work changed (work_base.py). A base made from the last one by the difference must hold what a new
base of the same work holds, in the same order; and cycles that keep it must decide as an engine
that remembers nothing, whatever changes between them."""

from __future__ import annotations

import dataclasses
import random
from datetime import timedelta

import pytest

from airflow_mcsched.decision import Policy, decide, plan_cache
from airflow_mcsched.decision.admission import DEFAULT_PLUGINS
from airflow_mcsched.decision.outcome import Outcome
from airflow_mcsched.decision.policy import TeamQuota
from airflow_mcsched.decision.pool_stamps import StampBook
from airflow_mcsched.decision.work_base import WorkBase, next_base
from tests.decision.fleet_factory import NOW, cluster, observe, pool, request, reservation, view_of

pytestmark = pytest.mark.usefixtures("fresh_memory")

HOUR = timedelta(hours=1)
POOLS = {"a": ("p0", "p1"), "b": ("p0",)}
NODES = 3
TEAMS = ("ml", "cv", "nlp")


def _profiles():
    return [cluster(c, *(pool(p, gpus_per_node=8, nodes=NODES) for p in pools)) for c, pools in POOLS.items()]


def _one(rng: random.Random, n: int):
    c = rng.choice(sorted(POOLS))
    p = rng.choice(POOLS[c])
    return reservation(
        f"w{n}",
        c,
        p,
        f"{c}-{p}-{rng.randrange(NODES)}",
        gpus=rng.choice([1, 1, 2]),
        gpu_milli=rng.choice([0, 0, 300]),  # fractions of a GPU: float sums that depend on their order
        team=rng.choice(TEAMS),
        priority=rng.choice([0, 100]),
        interruptible=rng.random() < 0.6,
        ends_in=rng.randint(1, 6) * HOUR,
        expires_in=12 * HOUR,
        preempted_by="someone" if rng.random() < 0.1 else None,
    )


def _changed(rng: random.Random, work: list, counter: list[int]) -> list:
    """`work` with a few reservations ended, added, marked as stopping or moved to another priority."""
    work = list(work)
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        if kind < 0.3 and work:
            work.pop(rng.randrange(len(work)))
        elif kind < 0.6:
            counter[0] += 1
            work.insert(rng.randrange(len(work) + 1), _one(rng, counter[0]))
        elif work:
            i = rng.randrange(len(work))
            if kind < 0.8:
                work[i] = dataclasses.replace(work[i], preempted_by=rng.choice([None, "someone", "other"]))
            else:
                work[i] = dataclasses.replace(work[i], priority=100 - work[i].priority)
    return work


def _view(rng: random.Random, work: list):
    """The fleet, each cluster's read showing most of the work on its nodes (some not yet)."""
    entries = []
    for profile in _profiles():
        seen = [r.id for r in work if r.cluster == profile.name and rng.random() < 0.8]
        entries.append((profile, observe(profile, free={p: [2] * NODES for p in POOLS[profile.name]}, seen=seen)))
    return view_of(*entries)


def _indexes(base: WorkBase, view, book: StampBook) -> dict:
    keys = [(c, p) for c, pools in POOLS.items() for p in pools]
    return {
        "in_pool": {k: list(base.in_pool(k).items()) for k in keys},
        "work_in": {k: base.work_in(k) for k in keys},
        "ends": {k: base.latest_ends(k) for k in keys},
        "stamps": {k: base.ends_stamp(k, book) for k in keys},
        "interruptible": {k: base.interruptible(k) for k in [None, *keys]},
        "stopping": base.stopping(),
        "used": {team: list(use.items()) for team, use in base.used().items()},  # in summing order
        "unseen": base.unseen(view),
    }


@pytest.mark.parametrize("seed", range(20))
def test_a_base_made_from_the_last_one_holds_what_a_new_base_of_the_same_work_holds(seed):
    rng = random.Random(seed)
    counter = [40]
    work = [_one(rng, n) for n in range(40)]
    book = StampBook()
    last = None
    derived = 0
    view = _view(rng, work)
    for _ in range(8):
        by_id = {r.id: r for r in work}
        base = next_base(last, by_id)
        derived += base is not last and last is not None and base._by_pool is not None and len(by_id) > 0
        if rng.random() < 0.3:  # a new read: what it shows differs
            view = _view(rng, work)
        fresh = _indexes(WorkBase(dict(by_id)), view, book)
        kept = _indexes(base, view, book)
        assert kept == fresh
        assert list(base.by_id.values()) == work  # equal work: the caller's order
        last = base
        work = _changed(rng, work, counter)
    assert derived >= 5  # most bases were made from the one before, with its indexes


def test_the_base_is_the_same_object_while_the_work_is_the_same():
    rng = random.Random(1)
    work = [_one(rng, n) for n in range(10)]
    first = next_base(None, {r.id: r for r in work})
    assert next_base(first, {r.id: r for r in work}) is first
    view = _view(rng, work)
    assert first.unseen(view) is first.unseen(view)  # what the capacity state's token is found by
    assert next_base(first, {r.id: r for r in work[1:]}) is not first


def test_cycles_that_keep_the_running_work_decide_as_an_engine_that_remembers_nothing():
    """Work ended, granted, stopping or moved to another priority between cycles, reads that show
    more or less of it, teams with quotas in a cohort: each cycle's decisions are those of an engine
    that starts afresh. The queue preempts in some cycles and waits behind a head in others."""
    policy = Policy(
        quotas=[
            TeamQuota(team="ml", nominal={"A100": 6}, cohort="lab"),
            TeamQuota(team="cv", nominal={"A100": 6}, cohort="lab"),
        ],
        backfill_heads=2,
    )
    outcomes: set[Outcome] = set()
    for seed in range(6):
        rng = random.Random(seed)
        counter = [40]
        work = [_one(rng, n) for n in range(40)]
        cycles = []
        for _ in range(5):
            queue = [
                request(
                    f"q{i}",
                    gpus=rng.choice([1, 2, 4, 8]),
                    pods=rng.choice([1, 1, 2]),
                    team=rng.choice(TEAMS),
                    priority_class=rng.choice(["low", "normal", "high"]),
                    interruptible=rng.random() < 0.5,
                    arrival=NOW - timedelta(minutes=30 - i),
                )
                for i in range(8)
            ]
            cycles.append((_view(rng, work), queue, work))
            work = _changed(rng, work, counter)
        plan_cache.forget_all()
        kept = [decide(view, queue, w, policy, NOW) for view, queue, w in cycles]
        memory = plan_cache.plan_memory(cycles[-1][0], policy, DEFAULT_PLUGINS)
        assert memory.work is not None and list(memory.work.by_id.values()) == cycles[-1][2]
        fresh = []
        for view, queue, w in cycles:
            plan_cache.forget_all()
            fresh.append(decide(view, queue, w, policy, NOW))
        assert [repr(r.decisions) for r in kept] == [repr(r.decisions) for r in fresh], seed
        outcomes.update(d.outcome for r in kept for d in r.decisions)
    assert {Outcome.ADMITTED, Outcome.WAITING, Outcome.PREEMPTING} <= outcomes


def test_a_quota_first_asked_after_the_cycle_changed_its_work_counts_the_work_as_it_is_then():
    """The ledger starts from the base's sums only while the cycle has changed nothing; asked after a
    grant or an eviction, it sums the work as it is (as a fresh ledger would), grants included."""
    from airflow_mcsched.decision.cycle_state import CycleState

    rng = random.Random(3)
    work = [_one(rng, n) for n in range(20)]
    granted = reservation("new", "a", "p0", "a-p0-0", gpus=2, team="ml", expires_in=12 * HOUR)
    cycle = CycleState(_view(rng, work), {r.id: r for r in work}, Policy(), NOW, DEFAULT_PLUGINS)
    cycle.grant(granted)
    cycle.evict(work[0])
    expected = sum(r.gpu_equivalent for r in [*work[1:], granted] if r.team == "ml")
    assert cycle.quota.total_used("ml") == pytest.approx(expected)


def test_a_cycles_grants_and_evictions_change_its_own_work_never_the_base_nor_the_callers():
    """The base (and the caller's dict it holds) is the next cycle's start: a cycle changes a copy."""
    from airflow_mcsched.decision.cycle_state import CycleState

    rng = random.Random(4)
    work = [_one(rng, n) for n in range(20)]
    active = {r.id: r for r in work}
    cycle = CycleState(_view(rng, work), active, Policy(), NOW, DEFAULT_PLUGINS)
    base = cycle.running.base
    cycle.grant(reservation("new", "a", "p0", "a-p0-0", gpus=2, team="ml", expires_in=12 * HOUR))
    cycle.evict(work[0])
    assert list(active.values()) == work and list(base.by_id.values()) == work
    assert [r.id for r in cycle.running.values()] == [r.id for r in work[1:]] + ["rsv-new"]
    assert not cycle.running.remove(work[0])  # already gone: nothing to take away twice


def test_the_work_by_team_and_gpu_type_and_a_spread_groups_domains_follow_the_cycles_changes():
    """Both are made when first asked and kept up to date as the cycle grants and stops work, so
    after any changes they read as they would if made from the cycle's work then."""
    from airflow_mcsched.decision.cycle_state import CycleState

    rng = random.Random(5)
    work = [
        dataclasses.replace(  # the spread group's members run in cluster a only, to begin with
            r, gpu_type=rng.choice(["A100", "H100", None]), spread_group="g" if r.cluster == "a" else None
        )
        for r in (_one(rng, n) for n in range(30))
    ]
    profiles = [  # each cluster a failure domain of its own (region r-a, r-b)
        cluster(c, *(pool(p, gpus_per_node=8, nodes=NODES) for p in pools), region=f"r-{c}")
        for c, pools in POOLS.items()
    ]
    view = view_of(*((p, observe(p, free={q: [2] * NODES for q in POOLS[p.name]})) for p in profiles))
    cycle = CycleState(view, {r.id: r for r in work}, Policy(), NOW, DEFAULT_PLUGINS)
    running = cycle.running

    def by_hand(teams, gpu_type):
        return sorted(r.id for r in running.values() if r.team in teams and r.gpu_type == gpu_type)

    def domains_by_hand(group):
        return {view.cluster(r.cluster).failure_domain for r in running.values() if r.spread_group == group}

    asked = [(("ml", "cv"), "A100"), (("nlp",), "H100"), (TEAMS, None), (("nobody",), "A100")]
    assert all(sorted(r.id for r in running.of_teams(t, g)) == by_hand(t, g) for t, g in asked)
    first = running.spread_domains("g")
    assert first == {"r-a/default"} == domains_by_hand("g")
    assert running.spread_domains("g") is first  # kept while the group's work is unchanged
    for n in range(12):  # grants in both clusters and evictions of the base's work, interleaved
        if n % 3 == 2:
            cycle.evict(work[n])
        else:
            c = "ab"[n % 2]
            cycle.grant(
                reservation(
                    f"new{n}",
                    c,
                    "p0",
                    f"{c}-p0-0",
                    team=TEAMS[n % 3],
                    gpu_type="A100",
                    spread_group="g",
                    expires_in=HOUR,
                )
            )
        assert all(sorted(r.id for r in running.of_teams(t, g)) == by_hand(t, g) for t, g in asked)
        assert running.spread_domains("g") == domains_by_hand("g")
    assert running.spread_domains("g") == {"r-a/default", "r-b/default"}
