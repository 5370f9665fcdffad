"""Get-or-make in a dict that starts afresh when full: how the engine interns what it meets; and a
table of two generations, for what a cycle keeps for the cycles after it."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from itertools import chain
from typing import Any, Generic, TypeVar

V = TypeVar("V")
K = TypeVar("K")


def get_or_make(table: dict | Generations, key: Hashable, limit: int, make: Callable[[], V]) -> V:
    """`table[key]`, made by `make()` the first time; the table is emptied first when it holds
    `limit` entries (what it held is only worked out again: memory stays bounded)."""
    value = table.get(key)
    if value is None:
        _make_room(table, limit)
        value = table[key] = make()
    return value


def held(
    table: dict[int, tuple[Any, V]] | Generations[int, tuple[Any, V]], key: K, limit: int, make: Callable[[K], V]
) -> V:
    """What `table` keeps for the object `key`, found by its identity (for objects that are not
    hashable, or whose hash costs more than their identity), made by `make(key)` the first time.
    The entry holds the object, so the id it is found by stays its own. Emptied first when it holds
    `limit` entries, as `get_or_make`."""
    known = table.get(id(key))
    if known is not None and known[0] is key:
        return known[1]
    _make_room(table, limit)
    value = make(key)
    table[id(key)] = (key, value)
    return value


def kept_for(table: dict[K, tuple[tuple, V]], key: K, work: tuple, limit: int, make: Callable[[tuple], V]) -> V:
    """What `table` keeps for `key` that was made from `work` (`make(work)`), kept while later callers
    find the same `work` there: a tuple of the same objects (compared by identity first), such as
    a pool's running work from one cycle to the next. Made again when it differs; emptied first
    when it holds `limit` entries, as `get_or_make`."""
    known = table.get(key)
    if known is not None and (known[0] is work or known[0] == work):
        return known[1]
    _make_room(table, limit)
    value = make(work)
    table[key] = (work, value)
    return value


def _make_room(table: dict | Generations, limit: int) -> None:
    """A dict holding `limit` entries is emptied; `Generations` bound themselves."""
    if isinstance(table, dict) and len(table) >= limit:
        table.clear()


class Generations(Generic[K, V]):
    """A table of at most `limit` entries, in two generations: when the newer holds half of them, it
    becomes the older and the one before is dropped. An entry read in the older is moved to the
    newer, so what is still asked for stays, and what two generations in a row did not read goes.

    For what each cycle adds and the next cycles read again: a table emptied when full forgot, at
    once, what the very next lookups ask for, and the cycle that met it did all that work again
    (on a live fleet, every waiting request's walk in one cycle: half again its usual time). Only
    what `get` and item assignment need of a dict, with `len`, `values` and `clear`."""

    __slots__ = ("_half", "newer", "older")

    def __init__(self, limit: int) -> None:
        self._half = max(1, limit // 2)
        self.newer: dict[K, V] = {}
        self.older: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        value = self.newer.get(key)
        if value is None:
            value = self.older.pop(key, None)
            if value is not None:
                self[key] = value
        return value

    def __setitem__(self, key: K, value: V) -> None:
        newer = self.newer
        if len(newer) >= self._half and key not in newer:
            self.older, self.newer = newer, {}
            newer = self.newer
        else:
            self.older.pop(key, None)  # each key once: a value set again is not left behind
        newer[key] = value

    def __len__(self) -> int:
        return len(self.newer) + len(self.older)

    def values(self) -> Iterator[V]:
        return chain(self.newer.values(), self.older.values())

    def clear(self) -> None:
        self.newer.clear()
        self.older.clear()
