"""The engine's bounded tables: made once per key, emptied when full, found by identity where asked."""

from __future__ import annotations

from airflow_mcsched.view.bounded_table import get_or_make, held


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
