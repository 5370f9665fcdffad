"""What the engine learns from a view's layout and keeps across views alike in it: plans, verdicts, fit answers.

What the engine derives from what the profiles declare of clusters and pools (their type, prices,
data, state: `GlobalView.layout`), the policy and the plugins alone holds for every view alike in
that layout, whatever a read found: the pools' lasting verdicts and the static scores. So a new
capacity read of an unchanged fleet (every sync, every instant of a replay) reuses them. What
depends on free capacity is remembered per capacity object and checked by identity: the fit
verdicts, rankings, and the capacity left by reservations whose pods the view does not show yet.
Cluster verdicts that read the read (its error, and its time against the clock) are kept per `now`
and read; the plans are kept per set of those verdicts and the fleet's GPUs by type
(candidate_plan.shared_plans).

At most `MAX_LAYOUTS` layouts, `MAX_POLICIES` policy and plugin pairs per layout, `MAX_CLOCKS` clock
readings, `MAX_PLANS` plans (in two generations) and `MAX_LASTING` verdicts and columns,
`MAX_CHANGED` capacities (and as many capacity states), `MAX_STATES` first capacity states,
`MAX_FIT_MEMOS` demands' fit verdicts and as many demands' fruitless victim searches,
`MAX_VICTIM_CONTENTS` pools' victims per entry, `MAX_POOLS` pools' sorted ends and `MAX_STAGINGS`
stagings of data are kept, so memory stays bounded whatever the caller does.
The walks, scans and words that one cycle's waiting requests leave for the next cycles' are kept
in two generations (`bounded_table.Generations`), not emptied all at once when full.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any, Protocol

from airflow_mcsched.decision.pool_stamps import StampBook
from airflow_mcsched.decision.work_base import WorkBase
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.bounded_table import Generations, get_or_make, held
from airflow_mcsched.view.capacity_table import canonical
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import GlobalView, PoolKey

MAX_LAYOUTS = 4
MAX_POLICIES = 4
MAX_CLOCKS = 4
MAX_PLANS = 4096
"""Plans, setups and ranking starts kept for one set of cluster verdicts, in two generations of
half as many each (`SharedPlans.older`), but for what one cycle adds."""
MAX_CHANGED = 16384
MAX_LASTING = 4096
"""Lasting verdicts and static score columns kept for one set of cluster verdicts (`SharedPlans.lasting`)."""
MAX_FIT_MEMOS = 4096
MAX_LAST_SCANS = 2048
"""Waiting requests' last scans kept, by demand and plan (`PlanMemory.last_scans`): each holds a
capacity object and a rejection per eligible pool."""
MAX_STATES = 16
MAX_FITTED_NOWHERE = 65536
"""Request ids a memory keeps as having fitted no pool when last decided (`PlanMemory.fitted_nowhere`)."""
MAX_VICTIM_CONTENTS = 4096
"""Pools and priorities whose victims' content a memory keeps (`PlanMemory.victims`)."""
MAX_POOLS = 16384
"""Pools whose running work's sorted ends a memory keeps (`PlanMemory.pool_ends`): one entry per pool."""
MAX_STAGINGS = 65536
"""Stagings of a list of data to a cluster (staging.py), and datasets' holders, a memory keeps: a
service meets new dataset paths for as long as it runs (dated partitions, new runs)."""
MAX_PER_CAPACITY = 100_000
"""Entries a memory keeps per capacity object (verdicts and bounds per demand, scored candidates
and summaries per setup), all its demands and setups together, before it forgets them at the start
of a cycle (`PlanMemory.trim`). Each table has its own bound too, but there is one per demand and
per setup: on a fleet whose reads drift (every read a new capacity object for some pools), those
alone let 1,000 all-different requests at 100 clusters keep some 350 MB."""
TRIM_EVERY = 16
"""Cycles between two looks at how much a memory keeps per capacity object."""


class PerCapacity(Protocol):
    """What a setup keeps per capacity object (pool_judgement.Setup): its memo, shared by the setups
    alike in demand and dynamic scores, and what it alone keeps."""

    memo: dict
    verdicts: dict
    """Fit verdicts, shared by the setups alike in demand."""

    def remembered(self) -> int: ...

    def forget_per_capacity(self) -> None:
        """Drop what the setup alone keeps per capacity object (`trim` empties the memos)."""


class Change(Enum):
    """How a cycle changes a pool's capacity (`PlanMemory.changed`)."""

    TAKE = "take"
    """A grant of this cycle (or capacity held for a preemptor), on the nodes it names."""
    TAKE_UNSEEN = "take unseen"
    """A grant whose pods the read does not show yet: held anywhere in the pool (`PoolCapacity.take`)."""
    GIVE_BACK = "give back"
    """Work that stops (a preemption victim)."""


class SharedPlans:
    """Plans, setups and where rankings start, for one set of cluster verdicts; the candidate search
    fills them.

    A cycle holds the object it started with, so replacing it (when it grew past half `MAX_PLANS`)
    never frees a plan a running cycle still uses. What the plans are made of (`lasting`) goes on
    into the one that replaces it, and the one replaced is kept as its `older` until the next
    replacement: an entry a cycle misses here and finds there is taken over (`from_older`).
    """

    __slots__ = ("lasting", "older", "plans", "ranking_starts", "setups")

    def __init__(self, lasting: dict[Hashable, Any] | None = None, older: SharedPlans | None = None) -> None:
        self.plans: dict[Hashable, Any] = {}
        self.setups: dict[Hashable, Any] = {}
        self.ranking_starts: dict[Hashable, Any] = {}
        self.lasting: dict[Hashable, Any] = {} if lasting is None or len(lasting) > MAX_LASTING else lasting
        """The pools' lasting verdicts and static score columns, by the filters' and scores'
        signatures (candidate_plan.py). Fewer than the plans made of them, and met again by new
        requests: a queue of 1,000 new all-different requests at 100 clusters makes some 500
        plans and 1,300 setups a cycle, from about 160 verdicts (the same each cycle) and a few
        hundred new columns. So these are kept when the plans start afresh, and the plans of the
        next queue are made from them. Entries are only added: a cycle that still holds the
        object it replaced may read them too. Past `MAX_LASTING` they start afresh with the rest."""
        self.older = older
        """The shared plans this one replaced, with none older: a live queue's requests wait for
        many cycles, and when the plans started afresh, every plan, setup and ranking start of the
        ones still waiting was made again in one cycle (twice the usual cycle, or more). Taken
        over one by one, as cycles meet them, they are made again only when two replacements in a
        row found nobody asking for them.

        The three tables go over together, at a cycle's start, not each on its own as
        `bounded_table.Generations` do: ranking starts are found by their plan's identity and do
        not hold the plan, so a start must not outlive every setup that holds it (a start is kept,
        or taken over, only beside a setup of its plan in the same shared plans)."""

    def from_older(self, table: str, key: Hashable) -> Any | None:
        """On a miss in `table` (`plans`, `setups` or `ranking_starts`), the older shared plans' entry
        for `key`, taken over into this one; None when there is none."""
        older = self.older
        if older is None:
            return None
        value = getattr(older, table).get(key)
        if value is not None:
            getattr(self, table)[key] = value
        return value

    def size(self) -> int:
        return len(self.plans) + len(self.setups) + len(self.ranking_starts)

    def all_setups(self) -> list[Any]:
        """This one's setups and the older one's, each once."""
        setups = {id(s): s for s in self.setups.values()}
        if self.older is not None:
            setups.update((id(s), s) for s in self.older.setups.values())
        return list(setups.values())


class PlanMemory:
    """What one view, one policy (by value) and one set of plugins have taught the engine so far."""

    __slots__ = (
        "_changed",
        "_clocks",
        "_cycles",
        "_shared",
        "_states",
        "_states_after",
        "any_reserved",
        "below",
        "data_sources",
        "derived",
        "fit_memo",
        "fits_nowhere",
        "fitted_nowhere",
        "fleet_verdicts",
        "fruitless",
        "last_scans",
        "plugins",
        "pool_ends",
        "preemptable",
        "staging",
        "stamps",
        "victims",
        "waiting_parts",
        "weights",
        "work",
    )

    def __init__(self, view: GlobalView, plugins: object) -> None:
        self.plugins = plugins
        self.any_reserved = any(c.reserved for c in view.clusters)
        self.weights: dict[Hashable, Any] = {}
        self.data_sources: dict[str, tuple[str, ...]] = {}
        self.derived: dict[Hashable, Any] = {}
        """What plugins work out from the view's layout once (keys of their own choosing)."""
        self.staging: dict[Hashable, Any] = {}
        self.fit_memo: dict[Hashable, dict[tuple[int, int], tuple]] = {}
        self.fleet_verdicts: dict[Hashable, tuple] = {}
        """What the lasting filters that read the request say of each cluster, by their signatures
        (candidate_plan.py): the same under every set of cluster verdicts, so kept beside them."""
        self.fits_nowhere: Generations[tuple[Hashable, object, int], tuple] = Generations(MAX_FIT_MEMOS)
        """The rejections of requests that fit no pool, by demand and fit filters, the capacity state
        they were judged in and the lasting rejections of their plan (candidates.py): kept across
        cycles, as that state's token is reached again by a cycle that changes what an earlier one
        changed."""
        self.last_scans: Generations[tuple[Hashable, int], Any] = Generations(MAX_LAST_SCANS)
        """The latest scan of a request that fits no pool, by demand and fit filters and the plan's
        identity, with the capacity objects its pools were judged on (`candidates.WaitingScan`): the
        next cycle's scan of the same judges again only the pools whose capacity object changed."""
        self.fitted_nowhere: Generations[str, bool] = Generations(MAX_FITTED_NOWHERE)
        """The requests, by id, that a scan found no pool for when last decided, among those whose
        verdicts read the team, the priority or the cycle (candidates.py): scanned first next time."""
        self.waiting_parts: Generations[tuple[int, int], tuple] = Generations(MAX_FIT_MEMOS)
        """The reason, rejections and tally of those rejections with a plan's lasting ones, by the
        identity of both, with the counts of the rejections judged (admission.py)."""
        self.preemptable: Generations[int, tuple[Any, list]] = Generations(MAX_FIT_MEMOS)
        """The pools such a shared walk rules out for capacity or quota alone, by its identity
        (preemption.py)."""
        self.fruitless: dict[Hashable, dict[int, tuple]] = {}
        """Victim searches that found nothing to stop, by demand and priority, then by fleet position,
        with what they read (preemption.py): kept across cycles, checked by identity."""
        self.victims: dict[tuple[PoolKey, int], tuple] = {}
        """A pool's work that requests of a priority may stop, by content, one object per pool and
        priority while it is unchanged (preemption.py): what `fruitless` searches are checked by."""
        self.below: dict[tuple[PoolKey, int], tuple] = {}
        """A pool's candidate victims at one priority (preemption.py), with the pool's work they were
        found in, before a cycle changed that work: a later cycle that finds the same work there
        takes them as they are. At most `MAX_VICTIM_CONTENTS`."""
        self.pool_ends: dict[PoolKey, Any] = {}
        """Each pool's running work, as the cycle that last asked found it, with its ends sorted
        (backfill.py): kept while a later cycle finds the same work there. One entry per pool, with
        the work it was made from (`bounded_table.kept_for`)."""
        self.work: WorkBase | None = None
        """The running work the last cycle started from, with its indexes (work_base.py): the next
        cycle's is made from it."""
        self.stamps = StampBook()
        """The running work's ends met so far (pool_stamps.py): verdicts with per-cycle values are
        kept with the stamp of what they read."""
        self._changed: dict[tuple[int, object, Change], tuple[PoolCapacity, PoolCapacity, tuple[NodeAllocation, ...]]]
        self._changed = {}
        self._clocks: dict[object, dict[str, Any]] = {}
        self._states: dict[tuple, tuple[tuple[PoolCapacity, ...], object, object]] = {}
        self._states_after: dict[tuple[object, int, int], tuple[PoolCapacity, object]] = {}
        self._shared: dict[Hashable, SharedPlans] = {}
        self._cycles = 0

    def trim(self) -> bool:
        """At the start of a cycle, every `TRIM_EVERY` cycles: forget what is kept per capacity
        object when it is more than `MAX_PER_CAPACITY` entries (and say so). Plans, setups and where
        rankings start stay; the verdicts, candidates and summaries of the pools a cycle meets are
        worked out again as they are on a new read. No decision depends on what is remembered."""
        self._cycles += 1
        if self._cycles % TRIM_EVERY:
            return False
        setups: list[PerCapacity] = [s for shared in self._shared.values() for s in shared.all_setups()]
        memos: dict[int, dict] = {id(m): m for m in self.fit_memo.values()}
        memos.update((id(s.memo), s.memo) for s in setups)  # a memo dropped from `fit_memo` a setup still uses
        memos.update((id(s.verdicts), s.verdicts) for s in setups)
        memos.update((id(m), m) for m in self.fruitless.values())
        if sum(map(len, memos.values())) + sum(s.remembered() for s in setups) <= MAX_PER_CAPACITY:
            return False
        for memo in memos.values():
            memo.clear()
        for setup in setups:
            setup.forget_per_capacity()
        self.last_scans.clear()  # they hold capacity objects too
        return True

    def changed(
        self, pool: PoolKey, capacity: PoolCapacity, pods: tuple[NodeAllocation, ...], how: Change
    ) -> PoolCapacity:
        """`capacity` of `pool` with `pods` taken or given back (`how`), one object per capacity
        object, pods and change: a cycle that places what an earlier one placed reaches the same
        capacity objects, and the fit verdicts, rankings and candidates remembered for them hold
        again. And one object per content (view/capacity_table.py): other grants that leave the pool
        as an earlier cycle or read left it reach that object too."""
        # A pool's pods that no node shows yet are found by identity: a full fleet has some 27,000,
        # hashing them cost more than the rest of the lookup, and the running work's base gives the
        # same tuple while the work is the same (work_base.py). A grant's or a victim's few pods by
        # value: new requests' candidates that place alike reach the same capacity objects.
        by_identity = how is Change.TAKE_UNSEEN
        key = (id(capacity), id(pods) if by_identity else pods, how)
        known = self._changed.get(key)
        if known is not None and known[0] is capacity and (known[2] is pods or not by_identity):  # held: ids stay
            return known[1]
        if len(self._changed) >= MAX_CHANGED:
            self._changed.clear()
        if how is Change.GIVE_BACK:
            after = capacity.give_back(pods)
        else:
            after = capacity.take(pods, anywhere=how is Change.TAKE_UNSEEN)
        after = canonical(pool, after)
        self._changed[key] = (capacity, after, pods)
        return after

    def first_capacity_state(
        self, view: GlobalView, deferred: tuple[tuple[int, tuple[NodeAllocation, ...]], ...]
    ) -> object:
        """A token for a cycle's capacity objects at its start: the view's, and the pods taken where it
        does not show them yet (`deferred`, by fleet position). Reads alike in both (a view read again
        keeps the capacity objects of unchanged pools) get the same token. `deferred` is found by its
        identity: the running work's base gives one object while that work and what the reads see
        of it are the same (work_base.py)."""
        capacities = tuple(view.capacity_by_ordinal.values())
        # the entry holds the capacity objects and `deferred`, so the ids in its key stay their own
        key = (tuple(map(id, capacities)), id(deferred))
        return get_or_make(self._states, key, MAX_STATES, lambda: (capacities, object(), deferred))[1]

    def capacity_state_after(self, state: object, ordinal: int, capacity: PoolCapacity) -> object:
        """The token for `state` with the pool at `ordinal` changed to `capacity`: a cycle that
        changes what an earlier one changed, in the same order, reaches the same tokens (the entry
        holds `capacity`, so the id in its key stays its own)."""
        key = (state, ordinal, id(capacity))
        return get_or_make(self._states_after, key, MAX_CHANGED, lambda: (capacity, object()))[1]

    def cluster_verdicts(self, clock: Hashable, judge: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Request-independent cluster verdicts at one `clock` (now and the clusters' read times:
        staleness)."""
        return get_or_make(self._clocks, clock, MAX_CLOCKS, judge)

    def fit_memo_for(self, key: Hashable) -> dict[tuple[int, int], tuple]:
        """Fit verdicts of one demand (and its dynamic scores, or its fit filters alone: the
        verdicts without scores) by pool and capacity object."""
        return get_or_make(self.fit_memo, key, MAX_FIT_MEMOS, dict)

    def fruitless_searches(self, key: Hashable) -> dict[int, tuple]:
        """Victim searches of one demand and priority that found nothing, by fleet position."""
        return get_or_make(self.fruitless, key, MAX_FIT_MEMOS, dict)

    def victims_alike(self, key: tuple[PoolKey, int], content: tuple) -> tuple:
        """`content` (what a pool's victims at one priority are), or the equal one kept for the pool
        and priority: searches kept with it hold while the object is the same."""
        known = self.victims.get(key)
        if known is not None and known == content:
            return known
        if len(self.victims) >= MAX_VICTIM_CONTENTS:
            self.victims.clear()
        self.victims[key] = content
        return content

    def shared(self, verdicts: Hashable) -> SharedPlans:
        """Plans for this set of cluster verdicts (the clusters ruled out, with their messages).

        The fit verdicts (`fit_memo`) stay when the plans start afresh: they are by demand and
        capacity object, not by plan, new requests of a known demand read them, and they have
        bounds of their own (`MAX_FIT_MEMOS`, `trim`)."""
        shared = self._shared.get(verdicts)
        if shared is None:
            if len(self._shared) >= MAX_CLOCKS:
                self._shared.clear()
            shared = self._shared[verdicts] = SharedPlans()
        elif shared.size() > MAX_PLANS // 2 or len(shared.lasting) > MAX_LASTING:
            shared.older = None  # two generations, at most: `MAX_PLANS` entries between them
            shared = self._shared[verdicts] = SharedPlans(shared.lasting, shared)
        return shared


_entries: dict[Hashable, dict[tuple[Hashable, object], PlanMemory]] = {}
"""Layout -> memories by (policy value, plugins), least recently used first."""
_policy_values: dict[int, tuple[object, Hashable]] = {}
"""Policy identity -> (the policy, its value as `_policy_value` gives it): worked out once per object."""
_lock = threading.Lock()


def _policy_value(policy: object) -> Hashable:
    """What the memory of a policy is found by: its value, so that every caller whose policy is
    equal (one read again from its file, a copy) reaches the same memory, and one that differs in
    any field never does. Policies are frozen models, so an object's value is worked out once."""
    return held(_policy_values, policy, MAX_LAYOUTS * MAX_POLICIES, _value_of)


def _value_of(policy: object) -> Hashable:
    dump = getattr(policy, "model_dump_json", None)
    return (type(policy), dump()) if dump is not None else policy


def plan_memory(view: GlobalView, policy: object, plugins: object) -> PlanMemory:
    """The memory for this view's layout, policy (by value) and plugins (a new one the first time
    they meet)."""
    key = view.layout
    with _lock:
        memories = _entries.pop(key, None)
        if memories is None:
            if len(_entries) >= MAX_LAYOUTS:
                del _entries[next(iter(_entries))]  # the least recently used
            memories = {}
        _entries[key] = memories  # at the end: most recently used
        memory_key = (_policy_value(policy), plugins)
        memory = memories.get(memory_key)
        if memory is None:
            if len(memories) >= MAX_POLICIES:
                memories.clear()
            memory = memories[memory_key] = PlanMemory(view, plugins)
        return memory


@contextmanager
def set_aside() -> Iterator[None]:
    """Decide inside with nothing remembered, and find the memory as it was after: a check that
    decides each cycle both ways (benchmarks/memory_soak.py) leaves the kept cycles' memory alone."""
    with _lock:
        entries, values = dict(_entries), dict(_policy_values)
    forget_all()
    try:
        yield
    finally:
        with _lock:
            _entries.clear()
            _entries.update(entries)
            _policy_values.clear()
            _policy_values.update(values)


def forget_all() -> None:
    """Drop everything remembered (tests compare decisions made with and without it)."""
    with _lock:
        _entries.clear()
        _policy_values.clear()


def remembered_layouts() -> int:
    with _lock:
        return len(_entries)
