"""`LazyDict`: values built from their stored form on first read, in the stored order."""

from __future__ import annotations

import copy

from agent_core._lazy import LazyDict, materialized, shallow_copy


def _lazy(built: list[str]) -> LazyDict:
    def load(key: str, raw: str) -> str:
        built.append(key)
        return raw.upper()

    return LazyDict({"a": "x", "b": "y", "c": "z"}, load)


def test_reading_one_value_builds_only_it() -> None:
    """Reading one value builds only it; len, in and the keys build nothing."""
    built: list[str] = []
    lazy = _lazy(built)
    assert len(lazy) == 3 and "b" in lazy and "d" not in lazy
    assert list(lazy) == ["a", "b", "c"] and list(reversed(lazy)) == ["c", "b", "a"]
    assert built == []
    assert lazy["b"] == "Y" and lazy.get("b") == "Y" and lazy.get("d", 1) == 1
    assert built == ["b"]


def test_values_items_and_copies_build_all_in_the_stored_order() -> None:
    """Values, items and copies build every value, in the stored order."""
    lazy = _lazy([])
    assert lazy["c"] == "Z"
    lazy["d"] = "W"
    assert list(lazy.items()) == [("a", "X"), ("b", "Y"), ("c", "Z"), ("d", "W")]
    assert copy.deepcopy(lazy) == dict(lazy) == {"a": "X", "b": "Y", "c": "Z", "d": "W"}


def test_setting_popping_and_deleting_a_stored_value() -> None:
    """A value set over a stored one replaces it; pop builds it; del drops it unbuilt."""
    built: list[str] = []
    lazy = _lazy(built)
    lazy["a"] = "new"
    assert lazy.pop("b") == "Y"
    del lazy["c"]
    assert dict(lazy) == {"a": "new"} and built == ["b"]


def test_renamed_keeps_stored_values_unbuilt() -> None:
    """A renamed copy carries stored values unbuilt and renames the built ones."""
    built: list[str] = []
    lazy = _lazy(built)
    assert lazy["a"] == "X"
    renamed = lazy.renamed({"a": "A", "b": "B"}, lambda key, value: f"{key}:{value}")
    assert list(renamed) == ["A", "B"] and built == ["a"]
    assert materialized(renamed) == {"A": "A:X", "B": "Y"}


def test_a_shallow_copy_builds_nothing_and_shares_built_values() -> None:
    """A shallow copy builds nothing and shares the values already built."""
    built: list[str] = []
    lazy = _lazy(built)
    first = lazy["a"]
    copied = shallow_copy(lazy)
    assert built == ["a"] and copied["a"] is first and copied["c"] == "Z"
    assert shallow_copy({"x": 1}) == {"x": 1}


def test_values_built_one_by_one_keep_the_stored_order() -> None:
    """Values read one by one, in any order, keep the stored order."""
    lazy = _lazy([])
    assert (lazy["c"], lazy["a"], lazy["b"]) == ("Z", "X", "Y")
    assert list(lazy) == list(reversed(list(reversed(lazy)))) == ["a", "b", "c"]
    assert list(lazy.values()) == ["X", "Y", "Z"]
