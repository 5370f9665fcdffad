"""Get-or-make in a dict that starts afresh when full: how the engine interns what it meets."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

V = TypeVar("V")


def get_or_make(table: dict, key: Hashable, limit: int, make: Callable[[], V]) -> V:
    """`table[key]`, made by `make()` the first time; the table is emptied first when it holds
    `limit` entries (what it held is only worked out again: memory stays bounded)."""
    value = table.get(key)
    if value is None:
        if len(table) >= limit:
            table.clear()
        value = table[key] = make()
    return value
