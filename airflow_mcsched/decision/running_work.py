"""The reservations held during one cycle: its base (work_base.py) and the cycle's own changes.

The base's indexes are kept from cycle to cycle; a pool the cycle grants or stops work in gets its
own copy of the base's index for it, so the base is never changed. Most cycles change few pools.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime

from airflow_mcsched.decision.pool_stamps import StampBook, WorkStamp
from airflow_mcsched.decision.reservation import Reservation
from airflow_mcsched.decision.work_base import WorkBase, later
from airflow_mcsched.view.snapshot import PoolKey


class RunningWork:
    __slots__ = (
        "_base",
        "_by_id",
        "_by_id_own",
        "_by_team_type",
        "_domain_of",
        "_ends_own",
        "_interruptible",
        "_latest_ends",
        "_lowest",
        "_own",
        "_pool_versions",
        "_spread",
        "_spread_sets",
        "_stamp_book",
        "_stamps",
        "_stopping_for",
        "_work",
        "log",
    )

    def __init__(
        self,
        reservations: WorkBase | Iterable[Reservation],
        domain_of: Callable[[str], str | None],
        stamp_book: StampBook | None = None,
        held: Mapping[str, Reservation] | None = None,
    ) -> None:
        """`held`: reservations of the base as the cycle reads them where that differs from the
        base's (`WorkBase.held`): their pools are the cycle's own from the start."""
        base = reservations if isinstance(reservations, WorkBase) else WorkBase({r.id: r for r in reservations})
        self._base = base
        self._by_id = base.by_id
        """The base's own dict until the cycle adds or removes work (`_changing`): most of a full
        fleet's 27,000 reservations are never asked for by id, and copying them is not free."""
        self._by_id_own = False
        self._domain_of = domain_of
        self._own: dict[PoolKey, dict[str, Reservation]] = {}
        """The pools whose work the cycle changed: each its own copy of the base's, changed."""
        self._latest_ends: dict[PoolKey, dict[str, datetime]] = {}
        self._ends_own: set[PoolKey] = set()  # pools whose ends above are the cycle's own copy
        self._stamp_book = stamp_book or StampBook()
        self._stamps: dict[PoolKey, WorkStamp] = {}
        self._interruptible: dict[PoolKey | None, Counter[int]] = {}
        """What the cycle changed of the base's interruptible counts (by pool, and None: anywhere)."""
        self._lowest: dict[PoolKey | None, float] = {}  # min of each of those counts, when asked
        self._stopping_for: Counter[str] = Counter()  # what the cycle changed of the base's
        self._spread: dict[str, Counter[str]] | None = None
        self._spread_sets: dict[str, frozenset[str]] = {}  # `spread_domains`, until the group's work changes
        self._by_team_type: defaultdict[tuple[str, str | None], dict[str, Reservation]] | None = None
        self._pool_versions: dict[PoolKey, int] = {}
        self._work: dict[PoolKey, tuple[int, tuple[Reservation, ...]]] = {}
        self.log: list[PoolKey] = []
        """The pools work was added to or removed from during the cycle, in order (with repeats): what
        changed since a given point, as `CapacityOverlay.log` says of capacity (empty: nothing yet)."""
        for r in (held or {}).values():
            self._own_pool(r.key)[r.id] = r
            self._changing()[r.id] = r
            self._pool_versions[r.key] = 1  # not the base's work: nothing kept for the base's holds

    def __len__(self) -> int:
        return len(self._by_id)

    def values(self) -> Iterable[Reservation]:
        return self._by_id.values()

    def _changing(self) -> dict[str, Reservation]:
        """The work by id, the cycle's own copy (made on the first change: the base is never changed)."""
        if not self._by_id_own:
            self._by_id = dict(self._by_id)
            self._by_id_own = True
        return self._by_id

    def _own_pool(self, key: PoolKey) -> dict[str, Reservation]:
        """The pool's work by id, the cycle's own copy (made on the first change, as `_changing`)."""
        own = self._own.get(key)
        if own is None:
            own = self._own[key] = dict(self._base.in_pool(key))
        return own

    @property
    def base(self) -> WorkBase:
        return self._base

    # -- changes -----------------------------------------------------------------------------
    def add(self, r: Reservation) -> None:
        self._changing()[r.id] = r
        self._index(r, +1)

    def remove(self, r: Reservation) -> bool:
        if r.id not in self._by_id:
            return False
        del self._changing()[r.id]
        self._index(r, -1)
        return True

    def _index(self, r: Reservation, step: int) -> None:
        key = r.key
        self.log.append(key)
        versions = self._pool_versions
        versions[key] = versions.get(key, 0) + 1  # not a Counter: a missing key is a Python-level call
        own = self._own_pool(key)
        if step > 0:
            own[r.id] = r
        else:
            own.pop(r.id, None)
        ends = self._latest_ends.get(key)
        if ends is not None:
            if step > 0:
                if key not in self._ends_own:  # the base's: copied before it changes
                    self._ends_own.add(key)
                    ends = self._latest_ends[key] = dict(ends)
                later(ends, r)
            else:  # the latest end may have been this one's: made again when next asked
                del self._latest_ends[key]
        stamp = self._stamps.get(key)
        if stamp is not None:
            if step > 0:
                self._stamps[key] = stamp.after(r.pods, r.expected_end)
            else:  # as the ends: found again from them when next asked
                del self._stamps[key]
        if r.interruptible and r.preempted_by is None:
            for k in (None, key):
                counts = self._interruptible.get(k)
                if counts is None:
                    counts = self._interruptible[k] = Counter(self._base.interruptible(k))
                counts[r.priority] += step
                if not counts[r.priority]:
                    del counts[r.priority]
                self._lowest.pop(k, None)
        if r.preempted_by is not None:
            self._stopping_for[r.preempted_by] += step
        if self._spread is not None and r.spread_group:
            domain = self._domain_of(r.cluster)
            if domain is not None:
                self._spread[r.spread_group][domain] += step
                self._spread_sets.pop(r.spread_group, None)
        if self._by_team_type is not None:
            of_team = self._by_team_type[(r.team, r.gpu_type)]
            if step > 0:
                of_team[r.id] = r
            else:
                of_team.pop(r.id, None)

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
        own = self._own.get(key)
        return (self._base.in_pool(key) if own is None else own).values()

    def work_in(self, key: PoolKey) -> tuple[Reservation, ...]:
        """`in_pool` as a tuple, made once while the pool's work is unchanged, and the base's own
        while the cycle has not changed it (one object from cycle to cycle): what the engine keeps
        from one cycle to the next for a pool's work is checked against it (by identity first)."""
        version = self._pool_versions.get(key, 0)
        if not version:
            return self._base.work_in(key)
        known = self._work.get(key)
        if known is None or known[0] != version:
            known = self._work[key] = (version, tuple(self.in_pool(key)))
        return known[1]

    def latest_ends(self, key: PoolKey) -> dict[str, datetime]:
        """Node -> the latest expected end of the work on it, in one pool: made when first asked, then
        kept up to date as work is granted there (a grant only moves ends later). Read only: it may
        be the base's."""
        ends = self._latest_ends.get(key)
        if ends is None:
            if key in self._own:
                ends = {}
                for r in self.in_pool(key):
                    later(ends, r)
                self._ends_own.add(key)
            else:  # the base's, kept from cycle to cycle (copied by `_index` before a grant changes it)
                ends = self._base.latest_ends(key)
            self._latest_ends[key] = ends
        return ends

    def ends_stamp(self, key: PoolKey) -> WorkStamp:
        """The stamp of `latest_ends(key)` (pool_stamps.py): found from the ends when first asked (the
        base's, kept from cycle to cycle, while the cycle has not changed the pool's work), then
        followed from grant to grant."""
        stamp = self._stamps.get(key)
        if stamp is None:
            if key in self._own:
                stamp = self._stamp_book.of(self.latest_ends(key))
            else:
                stamp = self._base.ends_stamp(key, self._stamp_book)
            self._stamps[key] = stamp
        return stamp

    def lowest_interruptible_priority(self, key: PoolKey | None) -> float:
        """Lowest priority of running interruptible work not already being stopped, in one pool or
        (key None) anywhere; inf if none."""
        lowest = self._lowest.get(key)
        if lowest is None:  # asked for every pool of every search: the minimum is kept until work changes
            counts = self._interruptible.get(key)
            if counts is None:
                counts = self._base.interruptible(key)
            lowest = self._lowest[key] = min(counts) if counts else float("inf")
        return lowest

    def stopping_for(self, request_id: str) -> bool:
        """True when victims chosen for this request earlier are still stopping."""
        return self._base.stopping().get(request_id, 0) + self._stopping_for.get(request_id, 0) > 0

    def spread_domains(self, group: str) -> frozenset[str]:
        """Failure domains that already hold a member of this spread group: one object while the
        group's work is unchanged (a member's every check of every cluster reads it)."""
        known = self._spread_sets.get(group)
        if known is not None:
            return known
        if self._spread is None:
            self._spread = defaultdict(Counter)
            for r in self._by_id.values():
                if r.spread_group:
                    domain = self._domain_of(r.cluster)
                    if domain is not None:
                        self._spread[r.spread_group][domain] += 1
        known = self._spread_sets[group] = frozenset(d for d, n in self._spread.get(group, Counter()).items() if n > 0)
        return known

    def of_teams(self, teams: Iterable[str], gpu_type: str | None) -> list[Reservation]:
        """The work of these teams on GPUs of `gpu_type`, anywhere: what may give back quota of that type
        (preemption.py reads it for each pool it searches for a team short of quota). Indexed by team
        and GPU type when first asked, then kept up to date: going over all running work for each
        pool searched was a seventh of a governed fleet's cycle."""
        index = self._by_team_type
        if index is None:
            index = self._by_team_type = defaultdict(dict)
            for r in self._by_id.values():
                index[(r.team, r.gpu_type)][r.id] = r
        return [r for team in teams for r in index.get((team, gpu_type), {}).values()]
