"""What per-cycle scores read of one pool in one cycle, as tokens compared by identity.

A per-cycle score (scores/base.py) reads the clock and the latest expected end of our work on each
node of the pool (`RunningWork.latest_ends`), and nothing else of its cycle. A `WorkStamp` stands
for one such set of ends, a `ClockStamp` for one set of ends at one clock reading. A verdict with
per-cycle values keeps the stamp it was worked out under: the `WorkStamp` where its values read
neither (`Score.cycle_free`), else the `ClockStamp`. It holds wherever the pool's stamps are that
object again: in its cycle until work is granted or stopped in the pool, and in any later cycle
alike in what it read (the same ends, and for a `ClockStamp` the same clock). So the engine keeps
verdicts with per-cycle values across cycles as it keeps the others, checking one identity.

Stamps are interned, so that cycles alike in what they read reach the same objects: by the ends
themselves when a cycle first reads a pool (`StampBook.of`), and from the stamp before for each
grant (`WorkStamp.after`: the ends after a grant follow from the ends before and the grant's nodes
and end), without reading the ends again.
"""

from __future__ import annotations

from datetime import datetime

from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.bounded_table import get_or_make

MAX_FOLLOWING = 1024
"""Stamps remembered after one stamp, by grant or by clock, before starting afresh (each is kept
by its entry; starting afresh only means later cycles work out their values again)."""

MAX_STAMPS = 16384
"""Sets of ends a book interns before starting afresh."""


class ClockStamp:
    """One set of ends at one clock reading (`WorkStamp.at`)."""

    __slots__ = ()


class WorkStamp:
    """One set of latest ends of our work on the nodes of a pool."""

    __slots__ = ("_after", "_clocks")

    def __init__(self) -> None:
        self._clocks: dict[datetime, ClockStamp] = {}
        self._after: dict[tuple[tuple[NodeAllocation, ...], datetime], WorkStamp] = {}

    def at(self, now: datetime) -> ClockStamp:
        """These ends at `now`: the same object for every cycle at that clock reading."""
        return get_or_make(self._clocks, now, MAX_FOLLOWING, ClockStamp)

    def after(self, pods: tuple[NodeAllocation, ...], end: datetime) -> WorkStamp:
        """These ends once work ending at `end` is granted on the nodes of `pods`."""
        return get_or_make(self._after, (pods, end), MAX_FOLLOWING, WorkStamp)


class StampBook:
    """The `WorkStamp` of each set of ends met so far, for one view's memory (plan_cache.py)."""

    __slots__ = ("_stamps",)

    def __init__(self) -> None:
        self._stamps: dict[frozenset[tuple[str, datetime]], WorkStamp] = {}

    def of(self, ends: dict[str, datetime]) -> WorkStamp:
        return get_or_make(self._stamps, frozenset(ends.items()), MAX_STAMPS, WorkStamp)
