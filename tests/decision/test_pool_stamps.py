"""Stamps stand for what per-cycle scores read of a pool: equal stamps must mean equal ends (and
clock), and cycles alike in what they read must reach the same stamps, or kept values would be
wrong or never kept."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from airflow_mcsched.decision import Policy, decide, plan_cache
from airflow_mcsched.decision.pool_stamps import StampBook
from airflow_mcsched.decision.running_work import RunningWork
from tests.decision.fleet_factory import NOW, cluster, observe, pool, request, reservation, view_of

pytestmark = pytest.mark.usefixtures("fresh_memory")

HOUR = timedelta(hours=1)
KEY = ("c", "gpu")


def _work(book: StampBook, *reservations) -> RunningWork:
    return RunningWork(reservations, lambda _: None, book)


def _replay(book: StampBook, start: list, steps: list) -> list:
    """(stamp, ends) of the pool before and after each step."""
    work = _work(book, *start)
    out = [(work.ends_stamp(KEY), dict(work.latest_ends(KEY)))]
    for kind, r in steps:
        if kind == "add":
            work.add(r)
        else:
            work.remove(r)
        out.append((work.ends_stamp(KEY), dict(work.latest_ends(KEY))))
    return out


@pytest.mark.parametrize("seed", range(30))
def test_a_stamp_followed_from_grant_to_grant_stands_for_the_ends_it_reaches(seed):
    """Random grants and evictions on one pool, replayed by a second `RunningWork` in the same
    order: both reach the same stamps at every step (the second cycle reuses what the first
    learned); and wherever two steps have the same stamp their ends are equal."""
    rng = random.Random(seed)
    start = [
        reservation(f"s{i}", "c", "gpu", f"n{rng.randrange(4)}", ends_in=rng.randint(1, 4) * HOUR) for i in range(3)
    ]
    held = list(start)
    steps = []
    for i in range(12):
        if rng.random() < 0.25 and held:
            steps.append(("remove", held.pop(rng.randrange(len(held)))))
        else:
            r = reservation(f"g{i}", "c", "gpu", f"n{rng.randrange(4)}", ends_in=rng.randint(1, 4) * HOUR)
            held.append(r)
            steps.append(("add", r))
    book = StampBook()
    first, second = _replay(book, start, steps), _replay(book, start, steps)
    assert all(a[0] is b[0] for a, b in zip(first, second, strict=True))
    for stamp, ends in first:
        assert all(e == ends for s, e in first if s is stamp)
    assert len({id(s) for s, _ in first}) > 1


def test_equal_ends_reached_apart_are_one_stamp_and_clocks_split_it():
    book = StampBook()
    a = _work(book, reservation("a", "c", "gpu", "n0", ends_in=HOUR))
    b = _work(book, reservation("other-id", "c", "gpu", "n0", ends_in=HOUR))
    assert a.ends_stamp(KEY) is b.ends_stamp(KEY)  # the same ends, whoever holds them
    assert _work(book).ends_stamp(KEY) is not a.ends_stamp(KEY)
    stamp = a.ends_stamp(KEY)
    assert stamp.at(NOW) is stamp.at(NOW)
    assert stamp.at(NOW) is not stamp.at(NOW + timedelta(seconds=5))


def test_a_verdict_read_at_one_clock_is_measured_again_at_another_and_kept_at_the_same():
    """Next to our work of known end, `whole_nodes` reads the clock: a later cycle at another clock
    measures it again (the value moves, as an engine that remembers nothing finds it), and one at
    the same clock and with the same running work takes the candidate kept."""
    profile = cluster("a", pool("p", gpus_per_node=4, nodes=1))

    def read(now):  # a read at each moment: the view's capacity objects are those of the first read
        return view_of((profile, observe(profile, free={"p": [2]}, seen=["rsv-ours"], at=now)), at=now)

    ours = reservation("ours", "a", "p", "a-p-0", gpus=2, ends_in=2 * HOUR, expires_in=timedelta(days=1))
    ask = [request("r", gpus=1, expected_duration=5 * HOUR)]
    moments = [NOW, NOW + HOUR, NOW + HOUR, NOW]
    remembered = [decide(read(now), ask, [ours], Policy(), now).decisions[0].placement for now in moments]
    fresh = []
    for now in moments:
        plan_cache.forget_all()
        fresh.append(decide(read(now), ask, [ours], Policy(), now).decisions[0].placement)
    assert remembered == fresh
    values = [p.part("whole_nodes").value for p in remembered]
    # 3 h, then 4 h, of its 5 past the node's last end, on a 4-GPU node it takes 1 of
    assert values[0] == pytest.approx(1 - 3 / 5 * 3 / 4)
    assert values[1] == pytest.approx(1 - 4 / 5 * 3 / 4)
    assert remembered[2] is remembered[1]  # the same clock, the same work: kept
    assert remembered[3] == remembered[0]
