"""The reservations held during one cycle, with indexes built only when a feature first asks for them.

Most cycles need none of them (no backfill head, no preemption), so holding 10,000 reservations
costs one dict; each index, once built, is kept up to date as work is granted and evicted.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime

from airflow_mcsched.decision.pool_stamps import StampBook, WorkStamp
from airflow_mcsched.decision.reservation import Reservation
from airflow_mcsched.view.snapshot import PoolKey


class RunningWork:
    __slots__ = (
        "_by_pool",
        "_domain_of",
        "_interruptible",
        "_latest_ends",
        "_lowest",
        "_pool_versions",
        "_spread",
        "_stamp_book",
        "_stamps",
        "_stopping_for",
        "_work",
        "by_id",
        "version",
    )

    def __init__(
        self,
        reservations: Iterable[Reservation],
        domain_of: Callable[[str], str | None],
        stamp_book: StampBook | None = None,
    ) -> None:
        self.by_id: dict[str, Reservation] = {r.id: r for r in reservations}
        self._domain_of = domain_of
        self._by_pool: dict[PoolKey, dict[str, Reservation]] | None = None
        self._latest_ends: dict[PoolKey, dict[str, datetime]] = {}
        self._stamp_book = stamp_book or StampBook()
        self._stamps: dict[PoolKey, WorkStamp] = {}
        self._interruptible: dict[PoolKey | None, Counter[int]] | None = None
        self._lowest: dict[PoolKey | None, float] = {}  # min of each of those counts, when asked
        self._stopping_for: Counter[str] | None = None
        self._spread: dict[str, Counter[str]] | None = None
        self._pool_versions: dict[PoolKey, int] = {}
        self._work: dict[PoolKey, tuple[int, tuple[Reservation, ...]]] = {}
        self.version = 0
        """Grows whenever work is added or removed anywhere during the cycle."""

    def __len__(self) -> int:
        return len(self.by_id)

    def values(self) -> Iterable[Reservation]:
        return self.by_id.values()

    # -- changes -----------------------------------------------------------------------------
    def add(self, r: Reservation) -> None:
        self.by_id[r.id] = r
        self._index(r, +1)

    def remove(self, r: Reservation) -> bool:
        if self.by_id.pop(r.id, None) is None:
            return False
        self._index(r, -1)
        return True

    def _index(self, r: Reservation, step: int) -> None:
        self.version += 1
        versions = self._pool_versions
        versions[r.key] = versions.get(r.key, 0) + 1  # not a Counter: a missing key is a Python-level call
        if self._by_pool is not None:
            if step > 0:
                self._by_pool[r.key][r.id] = r
            else:
                self._by_pool[r.key].pop(r.id, None)
        ends = self._latest_ends.get(r.key)
        if ends is not None:
            if step > 0:
                _later(ends, r)
            else:  # the latest end may have been this one's: made again when next asked
                del self._latest_ends[r.key]
        stamp = self._stamps.get(r.key)
        if stamp is not None:
            if step > 0:
                self._stamps[r.key] = stamp.after(r.pods, r.expected_end)
            else:  # as the ends: found again from them when next asked
                del self._stamps[r.key]
        if self._interruptible is not None and r.interruptible and r.preempted_by is None:
            for key in (None, r.key):
                counts = self._interruptible[key]
                counts[r.priority] += step
                if not counts[r.priority]:
                    del counts[r.priority]
                self._lowest.pop(key, None)
        if self._stopping_for is not None and r.preempted_by is not None:
            self._stopping_for[r.preempted_by] += step
        if self._spread is not None and r.spread_group:
            domain = self._domain_of(r.cluster)
            if domain is not None:
                self._spread[r.spread_group][domain] += step

    # -- reading -----------------------------------------------------------------------------
    def pool_version(self, key: PoolKey) -> int:
        """Grows whenever work is added to or removed from the pool during the cycle."""
        return self._pool_versions.get(key, 0)

    @property
    def pool_versions(self) -> Mapping[PoolKey, int]:
        """`pool_version` of every pool with work added or removed (the others: 0), kept up to date:
        for a loop over many pools, which reads it without a call per pool."""
        return self._pool_versions

    @property
    def known_lowest(self) -> Mapping[PoolKey | None, float]:
        """`lowest_interruptible_priority` of the pools asked about since their work last changed,
        kept up to date (a pool missing here is asked through the method)."""
        return self._lowest

    def in_pool(self, key: PoolKey) -> Iterable[Reservation]:
        if self._by_pool is None:
            self._by_pool = defaultdict(dict)
            for r in self.by_id.values():
                self._by_pool[r.key][r.id] = r
        return self._by_pool.get(key, {}).values()

    def work_in(self, key: PoolKey) -> tuple[Reservation, ...]:
        """`in_pool` as a tuple, made once while the pool's work is unchanged: what the engine keeps
        from one cycle to the next for a pool's work is checked against it (equal while the
        reservations are the same objects, compared by identity first)."""
        version = self._pool_versions.get(key, 0)
        known = self._work.get(key)
        if known is None or known[0] != version:
            known = self._work[key] = (version, tuple(self.in_pool(key)))
        return known[1]

    def latest_ends(self, key: PoolKey) -> dict[str, datetime]:
        """Node -> the latest expected end of the work on it, in one pool: made when first asked, then
        kept up to date as work is granted there (a grant only moves ends later)."""
        ends = self._latest_ends.get(key)
        if ends is None:
            ends = self._latest_ends[key] = {}
            for r in self.in_pool(key):
                _later(ends, r)
        return ends

    def ends_stamp(self, key: PoolKey) -> WorkStamp:
        """The stamp of `latest_ends(key)` (pool_stamps.py): found from the ends when first asked,
        then followed from grant to grant."""
        stamp = self._stamps.get(key)
        if stamp is None:
            stamp = self._stamps[key] = self._stamp_book.of(self.latest_ends(key))
        return stamp

    def lowest_interruptible_priority(self, key: PoolKey | None) -> float:
        """Lowest priority of running interruptible work not already being stopped, in one pool or
        (key None) anywhere; inf if none."""
        if self._interruptible is None:
            self._interruptible = defaultdict(Counter)
            for r in self.by_id.values():
                if r.interruptible and r.preempted_by is None:
                    self._interruptible[None][r.priority] += 1
                    self._interruptible[r.key][r.priority] += 1
        lowest = self._lowest.get(key)
        if lowest is None:  # asked for every pool of every search: the minimum is kept until work changes
            counts = self._interruptible.get(key)
            lowest = self._lowest[key] = min(counts) if counts else float("inf")
        return lowest

    def stopping_for(self, request_id: str) -> bool:
        """True when victims chosen for this request earlier are still stopping."""
        if self._stopping_for is None:
            self._stopping_for = Counter(r.preempted_by for r in self.by_id.values() if r.preempted_by)
        return self._stopping_for.get(request_id, 0) > 0

    def spread_domains(self, group: str) -> set[str]:
        """Failure domains that already hold a member of this spread group."""
        if self._spread is None:
            self._spread = defaultdict(Counter)
            for r in self.by_id.values():
                if r.spread_group:
                    domain = self._domain_of(r.cluster)
                    if domain is not None:
                        self._spread[r.spread_group][domain] += 1
        return {d for d, n in self._spread.get(group, Counter()).items() if n > 0}


def _later(ends: dict[str, datetime], r: Reservation) -> None:
    end = r.expected_end
    for a in r.pods:
        known = ends.get(a.node)
        if known is None or known < end:
            ends[a.node] = end
