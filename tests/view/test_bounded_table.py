"""The engine's bounded tables: made once per key, emptied when full (or kept in two generations),
found by identity where asked."""

from __future__ import annotations

import random

from airflow_mcsched.view.bounded_table import Generations, get_or_make, held


def test_a_value_is_made_once_per_key_and_the_table_starts_afresh_when_full():
    table: dict = {}
    made = []

    def make(key):
        return lambda: made.append(key) or f"value of {key}"

    assert get_or_make(table, "a", 2, make("a")) == "value of a"
    assert get_or_make(table, "a", 2, make("a")) == "value of a"
    get_or_make(table, "b", 2, make("b"))
    assert made == ["a", "b"]
    get_or_make(table, "c", 2, make("c"))  # full: emptied first
    assert set(table) == {"c"}
    get_or_make(table, "a", 2, make("a"))
    assert made == ["a", "b", "c", "a"]


class _Equal:
    """Objects equal to one another, and unhashable: only their identity tells them apart."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Equal)


def test_held_values_are_found_by_identity_not_equality():
    table: dict = {}
    first, second = _Equal(), _Equal()
    assert first == second
    assert held(table, first, 8, lambda o: ["made for the first"]) == ["made for the first"]
    assert held(table, second, 8, lambda o: ["made for the second"]) == ["made for the second"]
    assert held(table, first, 8, lambda o: ["made again"]) == ["made for the first"]


def test_a_held_entry_keeps_its_object_so_a_reused_id_never_finds_another_objects_value():
    table: dict = {}
    gone = _Equal()
    held(table, gone, 8, lambda o: "for the object that is gone")
    ident = id(gone)
    del gone
    # the entry holds the object: its id cannot be handed to a new object while the entry lives
    assert table[ident][0] is not None
    newcomer = _Equal()
    assert id(newcomer) != ident
    assert held(table, newcomer, 8, lambda o: "for the newcomer") == "for the newcomer"


def test_held_empties_the_table_when_it_holds_the_limit():
    table: dict = {}
    objects = [_Equal() for _ in range(3)]
    for o in objects[:2]:
        held(table, o, 2, lambda o: "kept")
    held(table, objects[2], 2, lambda o: "after emptying")
    assert [entry[0] for entry in table.values()] == [objects[2]]


def test_generations_keep_what_is_read_again_and_drop_what_two_generations_did_not_read():
    table: Generations[str, int] = Generations(4)  # two generations of two
    table["a"], table["b"] = 1, 2
    table["c"] = 3  # the newer is full: a and b become the older
    assert (table.older, table.newer) == ({"a": 1, "b": 2}, {"c": 3})
    assert table.get("a") == 1  # read in the older: moved to the newer
    assert (table.older, table.newer) == ({"b": 2}, {"c": 3, "a": 1})
    table["d"] = 4  # the newer is full again: b, read by nobody since, is dropped
    assert (table.older, table.newer) == ({"c": 3, "a": 1}, {"d": 4})
    assert table.get("b") is None and len(table) == 3
    table["d"] = 5  # a key the newer holds is replaced in place, never a new generation
    assert table.newer == {"d": 5} and sorted(table.values()) == [1, 3, 5]
    table.clear()
    assert len(table) == 0 and table.get("a") is None


def test_generations_hold_at_most_their_limit_and_each_key_once():
    rng = random.Random(3)
    table: Generations[int, int] = Generations(10)
    model: dict[int, int] = {}  # what was set last for each key
    for _ in range(2000):
        key = rng.randrange(30)
        if rng.random() < 0.5:
            table[key] = model[key] = rng.randrange(1000)
        else:
            found = table.get(key)
            assert found is None or found == model[key]  # forgotten, or the value set last
        assert len(table) <= 10 and not set(table.newer) & set(table.older)


def test_held_and_get_or_make_leave_generations_to_bound_themselves():
    table: Generations = Generations(4)
    objects = [_Equal() for _ in range(5)]
    for o in objects:
        held(table, o, 4, lambda o: "kept")
    assert len(table) == 3  # two generations, the newer of one: never emptied whole
    assert held(table, objects[-1], 4, lambda o: "made again") == "kept"
    assert get_or_make(table, "k", 4, lambda: "v") == "v" and table.get("k") == "v"
