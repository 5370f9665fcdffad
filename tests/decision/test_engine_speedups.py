"""What makes a cycle cheaper must not change it: kept capacity objects across reads, the running
work's latest ends kept up to date, and the collector held off while a cycle runs."""

from __future__ import annotations

import gc
import threading
from datetime import timedelta

import pytest

from airflow_mcsched.decision import Outcome, Policy, decide, plan_cache
from airflow_mcsched.decision.gc_pause import collector_paused
from airflow_mcsched.decision.running_work import RunningWork
from airflow_mcsched.decision.scores import DEFAULT_SCORES
from airflow_mcsched.decision.scores.base import Score
from tests.decision.fleet_factory import NOW, cluster, observe, pool, request, reservation, view_of


@pytest.fixture(autouse=True)
def _fresh_memory():
    plan_cache.forget_all()
    yield
    plan_cache.forget_all()


def test_a_read_that_finds_a_pool_unchanged_keeps_its_capacity_object():
    """After a sync the engine's memory of every unchanged pool still holds: the builder hands such a
    pool the capacity object of its last read. A pool read differently gets a new one, and so does
    a pool that changes back (only the last read is kept)."""
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
    assert back.pool("keep", "small").capacity is not first.pool("keep", "small").capacity
    cordoned = view_of((profile, observe(profile, free={"big": [8, 2], "small": [4, 4]}, not_ready={"big": 1})))
    assert cordoned.pool("keep", "big").capacity is not first.pool("keep", "big").capacity
    assert cordoned.pool("keep", "big").capacity.nodes_excluded == 1


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
