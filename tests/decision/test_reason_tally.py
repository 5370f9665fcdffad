"""The tally of a waiting decision counted in parts (the plan's lasting rejections once, the pools
judged per request) reads as the tally of all its rejections in fleet order."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from airflow_mcsched.decision.explain import rejection_tally
from airflow_mcsched.decision.outcome import Rejection
from airflow_mcsched.decision.reason_tally import count_reasons, recounted, tally
from airflow_mcsched.decision.reasons import Reason


def _most_common_first(rejections: list[Rejection]) -> str:
    """The tally as it read before it was counted in parts: `Counter.most_common` (ties in the order
    reasons first appear)."""
    return ", ".join(f"{n} x {code}" for code, n in Counter(r.reason for r in rejections).most_common())


def test_a_tally_names_the_most_frequent_reason_first_and_ties_in_fleet_order():
    rejections = [
        Rejection("a", "p", Reason.NO_RDMA, "m"),
        Rejection("b", "p", Reason.INSUFFICIENT_FREE_GPUS, "m"),
        Rejection("c", "p", Reason.INSUFFICIENT_FREE_GPUS, "m"),
        Rejection("d", None, Reason.DATA_FAR_AWAY, "m"),
    ]
    assert rejection_tally(rejections) == "2 x InsufficientFreeGpus, 1 x NoRdma, 1 x DataFarAway"


@pytest.mark.parametrize("seed", range(40))
def test_counted_in_two_parts_the_tally_is_that_of_the_rejections_merged_in_fleet_order(seed):
    rng = random.Random(seed)
    reasons = rng.sample(list(Reason), rng.randint(1, 6))
    positions = rng.sample(range(400), rng.randint(1, 300))
    pairs = [(p, Rejection(f"c{p}", "pool", rng.choice(reasons), "m")) for p in positions]
    cut = rng.randint(0, len(pairs))
    lasting, judged = sorted(pairs[:cut], key=lambda t: t[0]), pairs[cut:]  # judged: in any order
    in_fleet_order = [r for _, r in sorted(pairs, key=lambda t: t[0])]
    expected = _most_common_first(in_fleet_order)
    assert tally(count_reasons(lasting), count_reasons(judged)) == expected
    assert rejection_tally(in_fleet_order) == expected


def test_a_tie_across_the_parts_goes_to_the_reason_met_first_in_the_fleet():
    """The plan's lasting rejections are counted first, but a reason of the pools judged now that
    comes earlier in the fleet goes first among equals."""
    lasting = [(5, Rejection("e", "p", Reason.NO_RDMA, "m")), (6, Rejection("f", "p", Reason.NO_RDMA, "m"))]
    judged = [
        (2, Rejection("b", "p", Reason.QUOTA_EXCEEDED, "m")),
        (1, Rejection("a", "p", Reason.QUOTA_EXCEEDED, "m")),
    ]
    assert tally(count_reasons(lasting), count_reasons(judged)) == "2 x QuotaExceeded, 2 x NoRdma"


@pytest.mark.parametrize("seed", range(40))
def test_counts_moved_to_new_reasons_are_the_counts_of_the_rejections_as_they_are_now(seed):
    """Some pools judged again, each now rejected for a reason of its own: the counts moved from the
    old reasons to the new ones are those counted afresh, or None when a reason loses the pool it
    was first met at."""
    rng = random.Random(seed)
    reasons = rng.sample(list(Reason), rng.randint(2, 5))
    positions = rng.sample(range(300), rng.randint(2, 60))
    before = [(p, Rejection(f"c{p}", "pool", rng.choice(reasons), "m")) for p in positions]
    now = list(before)
    moved = []
    for i in rng.sample(range(len(before)), rng.randint(1, min(5, len(before)))):
        position, rejection = before[i]
        reason = rng.choice([r for r in reasons if r is not rejection.reason])
        now[i] = (position, Rejection(rejection.cluster, "pool", reason, "m"))
        moved.append((position, rejection.reason, reason))
    counts = recounted(count_reasons(before), moved)
    if counts is None:  # only when a reason moved away from its first pool and is met again later
        assert any(count_reasons(before)[was][1] == p and count_reasons(before)[was][0] > 1 for p, was, _ in moved)
    else:
        assert counts == count_reasons(now)


def test_counts_moved_name_a_reason_first_met_at_a_pool_judged_again():
    """A pool earlier in the fleet than any other of its new reason is where that reason is first met."""
    before = [(1, Rejection("a", "p", Reason.NO_RDMA, "m")), (4, Rejection("b", "p", Reason.INSUFFICIENT_CPU, "m"))]
    counts = recounted(count_reasons(before), [(1, Reason.NO_RDMA, Reason.INSUFFICIENT_CPU)])
    assert counts == {Reason.INSUFFICIENT_CPU: (2, 1)}
