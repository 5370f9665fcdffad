"""How many pools or clusters each reason ruled out, in the words of a waiting decision.

'3 x InsufficientFreeGpus, 1 x DataFarAway': the most frequent reason first, a tie in the order the
reasons first appear in the fleet. A waiting request names every pool of the fleet, and most of its
rejections are the lasting ones of its plan, the same for every request of the plan: so they are
counted once with the plan (`count_reasons`), and only the pools judged in the cycle per request.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from operator import attrgetter, itemgetter

from airflow_mcsched.decision.outcome import Rejection
from airflow_mcsched.decision.reasons import Reason

ReasonCounts = dict[Reason, tuple[int, int]]
"""Reason -> (how many, the fleet position of the first)."""

_position = itemgetter(0)
_rejection = itemgetter(1)
_reason = attrgetter("reason")


def count_reasons(positioned: Iterable[tuple[int, Rejection]]) -> ReasonCounts:
    """The counts of (fleet position, rejection) pairs.

    Counted in C (`map`, `Counter`, `dict`): a waiting request has a rejection for most pools of the
    fleet, and its pools judged in the cycle are counted every cycle it waits."""
    last_first = sorted(positioned, key=_position, reverse=True)
    reasons = list(map(_reason, map(_rejection, last_first)))
    many = Counter(reasons)
    first = dict(zip(reasons, map(_position, last_first), strict=True))  # the last written: the first in the fleet
    return {reason: (n, first[reason]) for reason, n in many.items()}


def recounted(counts: ReasonCounts, moved: Iterable[tuple[int, Reason, Reason]]) -> ReasonCounts | None:
    """`counts` with each (fleet position, reason before, reason now) counted under its new reason;
    None when a reason loses the position it was first at (the next first is not known: count
    again). A waiting request's pools judged again in a cycle are few, and most keep their reason."""
    counts = dict(counts)
    for position, was, now in moved:
        n, first = counts[was]
        if n == 1:
            del counts[was]
        elif first == position:
            return None
        else:
            counts[was] = (n - 1, first)
        known = counts.get(now)
        counts[now] = (1, position) if known is None else (known[0] + 1, min(known[1], position))
    return counts


def tally(*parts: ReasonCounts) -> str:
    """The tally of the rejections counted in `parts` together."""
    merged: ReasonCounts = {}
    for counts in parts:
        for reason, (n, first) in counts.items():
            known = merged.get(reason)
            merged[reason] = (n, first) if known is None else (known[0] + n, min(known[1], first))
    ranked = sorted(merged.items(), key=lambda item: (-item[1][0], item[1][1]))
    return ", ".join(f"{n} x {reason}" for reason, (n, _) in ranked)
