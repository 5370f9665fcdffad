"""The running work a cycle starts from, and what is derived from it, kept from cycle to cycle.

A full fleet holds some 27,000 reservations, and the service hands the engine the same reservation
objects each cycle, with the few granted, released or expired since. Indexing all of them every
cycle (by pool, interruptible work by priority, GPUs used per team, pods no node shows yet) was a
fifth of such a cycle. A `WorkBase` holds one set of reservations, and makes each index the first
time it is asked for. The next cycle's base is made from the last one by the difference
(`next_base`): what was derived for pools whose work is the same objects is kept, and the rest is
made again, in the order a fresh base would make it, so that nothing decided depends on what was
kept (quota sums are floats: they are summed again in the same order, never adjusted).

A base is never changed once made, but for its indexes being filled in as they are asked for (the
same for every caller); a cycle's own grants and evictions are `RunningWork`'s, over it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import datetime

from airflow_mcsched.decision.pool_stamps import StampBook, WorkStamp
from airflow_mcsched.decision.quota import use_of
from airflow_mcsched.decision.reservation import Reservation
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.snapshot import GlobalView, PoolKey

Unseen = tuple[tuple[tuple[int, tuple[NodeAllocation, ...]], ...], tuple[PoolKey, ...]]
"""(fleet position, pods) of each pool where the view shows some of the work's pods on no node yet,
by position, and the pools' keys in the same order."""

_NO_WORK: Mapping[str, Reservation] = {}


class WorkBase:
    """One set of reservations (by id, in the caller's order), and its indexes, made when asked."""

    __slots__ = (
        "_by_pool",
        "_ends",
        "_held",
        "_interruptible",
        "_stamps",
        "_stopping",
        "_unseen",
        "_used",
        "_work",
        "by_id",
    )

    def __init__(self, by_id: dict[str, Reservation]) -> None:
        self.by_id = by_id
        self._by_pool: dict[PoolKey, dict[str, Reservation]] | None = None
        self._interruptible: dict[PoolKey | None, Counter[int]] | None = None
        self._stopping: Counter[str] | None = None
        self._used: dict[str, dict[str, float]] | None = None
        self._work: dict[PoolKey, tuple[Reservation, ...]] = {}
        self._ends: dict[PoolKey, dict[str, datetime]] = {}
        self._stamps: dict[PoolKey, WorkStamp] = {}
        self._unseen: tuple[tuple, dict[PoolKey, tuple[NodeAllocation, ...]], set[PoolKey], Unseen | None] | None = None
        self._held: tuple[Unseen, dict[str, Reservation]] | None = None

    # -- indexes -------------------------------------------------------------------------------
    def in_pool(self, key: PoolKey) -> Mapping[str, Reservation]:
        """The pool's reservations by id, in the base's order."""
        if self._by_pool is None:
            by_pool: dict[PoolKey, dict[str, Reservation]] = defaultdict(dict)
            for r in self.by_id.values():
                by_pool[r.key][r.id] = r
            self._by_pool = dict(by_pool)
        return self._by_pool.get(key, _NO_WORK)

    def work_in(self, key: PoolKey) -> tuple[Reservation, ...]:
        """`in_pool` as a tuple, one object for as long as the pool's work is the same objects: what
        the engine keeps from one cycle to the next for a pool is checked against it."""
        work = self._work.get(key)
        if work is None:
            work = self._work[key] = tuple(self.in_pool(key).values())
        return work

    def latest_ends(self, key: PoolKey) -> dict[str, datetime]:
        """Node -> the latest expected end of the pool's work on it (read only: callers copy it)."""
        ends = self._ends.get(key)
        if ends is None:
            ends = self._ends[key] = {}
            for r in self.in_pool(key).values():
                later(ends, r)
        return ends

    def ends_stamp(self, key: PoolKey, book: StampBook) -> WorkStamp:
        stamp = self._stamps.get(key)
        if stamp is None:
            stamp = self._stamps[key] = book.of(self.latest_ends(key))
        return stamp

    def interruptible(self, key: PoolKey | None) -> Counter[int]:
        """Interruptible work not already stopping, counted by priority, in one pool or (None) anywhere."""
        if self._interruptible is None:
            counts: dict[PoolKey | None, Counter[int]] = defaultdict(Counter)
            for r in self.by_id.values():
                if r.interruptible and r.preempted_by is None:
                    counts[None][r.priority] += 1
                    counts[r.key][r.priority] += 1
            self._interruptible = dict(counts)
        return self._interruptible.get(key) or Counter()

    def stopping(self) -> Counter[str]:
        """Work already stopping, counted by the request it stops for."""
        if self._stopping is None:
            self._stopping = Counter(r.preempted_by for r in self.by_id.values() if r.preempted_by)
        return self._stopping

    def used(self) -> dict[str, dict[str, float]]:
        """GPUs held per team and GPU type, summed in the base's order (read only: callers copy it)."""
        if self._used is None:
            self._used = use_of(self.by_id.values())
        return self._used

    def unseen(self, view: GlobalView) -> Unseen:
        """The pods of work whose cluster's read does not show it on a node yet, by pool: the same
        object for every cycle on reads of the same seen sets while the work is the same."""
        token = tuple(c.reservation_ids_seen for c in view.clusters)
        known = self._unseen
        if known is not None and known[0] == token and known[3] is not None:  # frozensets: by identity first
            return known[3]
        if known is not None and known[0] == token:  # kept for the untouched pools: the others again
            by_pool = dict(known[1])
            seen = {c.name: c.reservation_ids_seen for c in view.clusters}
            for key in known[2]:
                taken = _not_seen(self.in_pool(key).values(), seen.get(key[0], frozenset()))
                if taken:
                    by_pool[key] = taken
                else:
                    by_pool.pop(key, None)
        else:
            by_pool = _unseen_by_pool(self.by_id.values(), view)
        ordinal = view.pools_by_key
        found = sorted((ordinal[k].ordinal, k) for k in by_pool if k in ordinal)
        result: Unseen = (tuple((o, by_pool[k]) for o, k in found), tuple(k for _, k in found))
        self._unseen = (token, by_pool, set(), result)
        return result

    def held(self, view: GlobalView) -> Mapping[str, Reservation]:
        """Unseen work that its pool holds elsewhere than its own pods say, by id, each as held.

        The pods no read shows yet are held on their own nodes, and what a node has no room for
        on the pool's other nodes (`PoolCapacity.take(..., anywhere=True)`). Whatever reads such a
        reservation's pods (the search for work to stop, its eviction, backfill's ends) must read
        them where they are held: a copy with the pods as held, its size (quota, cost) its own.
        Most reads spill nothing, and then this is empty. The same mapping for every cycle on the
        same unseen pods (`unseen`)."""
        unseen = self.unseen(view)
        known = self._held
        if known is not None and known[0] is unseen:
            return known[1]
        moved: dict[str, Reservation] = {}
        deferred, keys = unseen
        for key, (_, taken) in zip(keys, deferred, strict=True):
            held = view.pools_by_key[key].capacity.held_anywhere(taken)
            if all(_as_own(h, a) for h, a in zip(held, taken, strict=True)):
                continue
            seen = view.cluster(key[0]).reservation_ids_seen
            at = 0
            for r in self.in_pool(key).values():  # in the order `taken` was made in
                if r.id in seen:
                    continue
                mine, at = held[at : at + len(r.pods)], at + len(r.pods)
                if not all(_as_own(h, a) for h, a in zip(mine, r.pods, strict=True)):
                    moved[r.id] = r.held_as(tuple(p for h in mine for p in h))
        self._held = (unseen, moved)
        return moved

    # -- the next base ---------------------------------------------------------------------------
    def _derived(self, by_id: dict[str, Reservation], added: list[Reservation], removed: list[Reservation]) -> WorkBase:
        """A base of `by_id`, which differs from this one's by `added` and `removed`."""
        base = WorkBase(by_id)
        touched = {r.key for r in added}
        touched.update(r.key for r in removed)
        base._work = {k: v for k, v in self._work.items() if k not in touched}
        base._ends = {k: v for k, v in self._ends.items() if k not in touched}
        base._stamps = {k: v for k, v in self._stamps.items() if k not in touched}
        if self._by_pool is not None:
            by_pool = dict(self._by_pool)
            remade: dict[PoolKey, dict[str, Reservation]] = {k: {} for k in touched}
            for r in by_id.values():  # one pass: each touched pool's work in the base's order
                pool = remade.get(r.key)
                if pool is not None:
                    pool[r.id] = r
            for k, pool in remade.items():
                if pool:
                    by_pool[k] = pool
                else:
                    by_pool.pop(k, None)
            base._by_pool = by_pool
        if self._interruptible is not None:
            counts = dict(self._interruptible)
            copied: set[PoolKey | None] = set()
            for r, step in [*((r, 1) for r in added), *((r, -1) for r in removed)]:
                if r.interruptible and r.preempted_by is None:
                    for where in (None, r.key):
                        if where not in copied:  # the old base keeps its own
                            copied.add(where)
                            counts[where] = Counter(counts.get(where, ()))
                        c = counts[where]
                        c[r.priority] += step
                        if not c[r.priority]:
                            del c[r.priority]
            base._interruptible = counts
        if self._stopping is not None:
            stopping = Counter(self._stopping)
            for r in added:
                if r.preempted_by:
                    stopping[r.preempted_by] += 1
            for r in removed:
                if r.preempted_by:
                    stopping[r.preempted_by] -= 1
            base._stopping = +stopping
        if self._unseen is not None:
            token, unseen, pending, _ = self._unseen
            base._unseen = (token, {k: v for k, v in unseen.items() if k not in touched}, pending | touched, None)
        return base


def next_base(last: WorkBase | None, by_id: dict[str, Reservation]) -> WorkBase:
    """The base for a cycle whose work is `by_id`: `last` when it holds the same (equal) work, one
    made from it when a little differs, else a new one."""
    if last is None:
        return WorkBase(by_id)
    if by_id == last.by_id:  # the same objects compare by identity first
        return last
    known = last.by_id
    added = [r for r in by_id.values() if known.get(r.id) is not r]
    removed = [r for i, r in known.items() if by_id.get(i) is not r]
    if 4 * (len(added) + len(removed)) > len(by_id):
        return WorkBase(by_id)
    return last._derived(by_id, added, removed)


def later(ends: dict[str, datetime], r: Reservation) -> None:
    """`ends` with `r`'s end on its nodes, where it is later."""
    end = r.expected_end
    for a in r.pods:
        known = ends.get(a.node)
        if known is None or known < end:
            ends[a.node] = end


def _as_own(held: tuple[NodeAllocation, ...], pod: NodeAllocation) -> bool:
    """The pod is held as itself, on its own node (`PoolCapacity.held_anywhere`)."""
    return len(held) == 1 and held[0] is pod


def _not_seen(work, seen: frozenset[str]) -> tuple[NodeAllocation, ...]:
    return tuple([a for r in work if r.id not in seen for a in r.pods])


def _unseen_by_pool(work, view: GlobalView) -> dict[PoolKey, tuple[NodeAllocation, ...]]:
    seen = {c.name: c.reservation_ids_seen for c in view.clusters}
    by_pool: dict[PoolKey, list[NodeAllocation]] = defaultdict(list)
    for r in work:
        if r.id not in seen.get(r.cluster, ()):
            by_pool[r.key].extend(r.pods)
    return {k: tuple(v) for k, v in by_pool.items()}
