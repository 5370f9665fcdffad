"""Get-or-make in a dict that starts afresh when full: how the engine interns what it meets."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

V = TypeVar("V")
K = TypeVar("K")


def get_or_make(table: dict, key: Hashable, limit: int, make: Callable[[], V]) -> V:
    """`table[key]`, made by `make()` the first time; the table is emptied first when it holds
    `limit` entries (what it held is only worked out again: memory stays bounded)."""
    value = table.get(key)
    if value is None:
        if len(table) >= limit:
            table.clear()
        value = table[key] = make()
    return value


def held(table: dict[int, tuple[Any, V]], key: K, limit: int, make: Callable[[K], V]) -> V:
    """What `table` keeps for the object `key`, found by its identity (for objects that are not
    hashable, or whose hash costs more than their identity), made by `make(key)` the first time.
    The entry holds the object, so the id it is found by stays its own. Emptied first when it holds
    `limit` entries, as `get_or_make`."""
    known = table.get(id(key))
    if known is not None and known[0] is key:
        return known[1]
    if len(table) >= limit:
        table.clear()
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
    if len(table) >= limit:
        table.clear()
    value = make(work)
    table[key] = (work, value)
    return value
