"""A dict whose values are built from their stored form when first read.

Loading a long task validated every step output and undo snapshot it holds, most of which no
one reads: a page shows a window of them, undo reads the last snapshot. `LazyDict` keeps each
one as its stored text and validates it on first access. It is a real `dict` (pydantic and
`isinstance` checks accept it), so every way of reading it goes through the methods below,
which build what they hand out; readers that bypass them (C code reading the dict's own
storage, such as pydantic-core's serializer) must call `materialize` first.
"""

from __future__ import annotations

import copy
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["LazyDict", "materialized", "paused_gc", "shallow_copy"]

_MISSING = object()


class LazyDict(dict):  # type: ignore[type-arg] - keys and values are the caller's.
    """A dict of values built by `load(key, raw)` when first read, in the order given.

    Values set later are plain. `len` and `in` build nothing; `[key]`, `get` and `pop` build
    that value; iterating, `keys`, `values`, `items` and copies build them all.
    """

    __slots__ = ("_load", "_order", "_raw")

    def __init__(self, raw: dict[Any, Any], load: Callable[[Any, Any], Any]) -> None:
        super().__init__()
        self._raw = dict(raw)
        self._order = list(raw)  # The built values keep the stored order.
        self._load = load

    def _build(self, key: Any) -> Any:
        value = self._load(key, self._raw.pop(key))
        super().__setitem__(key, value)
        return value

    def materialize(self) -> None:
        """Build every value still stored, keeping the order of the keys."""
        if not self._order:  # Nothing stored, or already in order.
            return
        built = {}
        for key in self._order:
            if key in self._raw:
                built[key] = self._build(key)
            elif super().__contains__(key):
                built[key] = super().__getitem__(key)
        rest = [(k, v) for k, v in super().items() if k not in built]
        super().clear()
        super().update(built)
        super().update(rest)
        self._order = []

    def __getitem__(self, key: Any) -> Any:
        if key in self._raw:
            return self._build(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self._raw:
            return self._build(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._raw or super().__contains__(key)

    def __len__(self) -> int:
        return len(self._raw) + super().__len__()

    def __iter__(self) -> Iterator[Any]:
        # Values built one by one went into the dict's storage in the order read: until all
        # are put back in order, the order is `_keys`'s.
        if not self._order:
            return super().__iter__()
        return iter(self._keys())

    def _keys(self) -> list[Any]:
        """The keys in order, building nothing: the stored ones, then those set later."""
        given = set(self._order)
        keys = [k for k in self._order if k in self._raw or dict.__contains__(self, k)]
        return keys + [k for k in super().__iter__() if k not in given]

    def renamed(
        self,
        names: dict[Any, Any],
        rename: Callable[[Any, Any], Any],
        rebuild: Callable[[Any, Any, Any], Any] | None = None,
    ) -> LazyDict:
        """A copy under new keys (`names`; keys it lacks are left out), building nothing.

        A built value goes over as `rename(new key, value)`. A stored one goes over as it is
        stored, built later by `rebuild(new key, old key, stored)`, or without `rebuild` by
        `load`, which must then take its key from the key it is given.
        """
        raw = {}
        for key in self._keys():
            if key not in names:
                continue
            if key not in self._raw:
                raw[names[key]] = _Built(rename(names[key], super().__getitem__(key)))
            elif rebuild is None:
                raw[names[key]] = self._raw[key]
            else:
                raw[names[key]] = _Moved(key, self._raw[key])
        return LazyDict(raw, _unless_built(self._load, rebuild))

    def load_stored(self, key: Any, stored: Any) -> Any:
        """The value `stored` builds under `key`, kept nowhere (a copy's `rebuild` calls it)."""
        return self._load(key, stored)

    def stored(self) -> dict[Any, Any]:
        """The values still in their stored form, as stored: a store writes them back as read."""
        return {
            key: raw.stored if isinstance(raw, _Moved) else raw
            for key, raw in self._raw.items()
            if not isinstance(raw, _Built)
        }

    def __reversed__(self) -> Iterator[Any]:
        return reversed(self._keys()) if self._order else super().__reversed__()

    def keys(self) -> Any:
        self.materialize()
        return super().keys()

    def values(self) -> Any:
        self.materialize()
        return super().values()

    def items(self) -> Any:
        self.materialize()
        return super().items()

    def __setitem__(self, key: Any, value: Any) -> None:
        self._raw.pop(key, None)
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        if self._raw.pop(key, _MISSING) is _MISSING:
            super().__delitem__(key)
        elif super().__contains__(key):
            super().__delitem__(key)

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self._raw:
            value = self._build(key)
            super().pop(key)
            return value
        return super().pop(key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return self[key]
        self[key] = default
        return default

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def popitem(self) -> tuple[Any, Any]:
        self.materialize()
        return super().popitem()

    def clear(self) -> None:
        self._raw.clear()
        self._order = []
        super().clear()

    def copy(self) -> dict[Any, Any]:
        self.materialize()
        return dict(super().items())

    def __eq__(self, other: object) -> bool:
        self.materialize()
        if isinstance(other, LazyDict):
            other.materialize()
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment] - a dict is unhashable.

    def __repr__(self) -> str:
        self.materialize()
        return super().__repr__()

    def __or__(self, other: Any) -> Any:
        return self.copy() | other

    def __copy__(self) -> dict[Any, Any]:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        return copy.deepcopy(self.copy(), memo)

    def __reduce__(self) -> Any:
        return (dict, (self.copy(),))


class _Built:
    """A value already built, among stored ones (`LazyDict.renamed`)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Moved:
    """A stored value under a new key (`LazyDict.renamed` with `rebuild`)."""

    __slots__ = ("key", "stored")

    def __init__(self, key: Any, stored: Any) -> None:
        self.key, self.stored = key, stored


def _unless_built(
    load: Callable[[Any, Any], Any], rebuild: Callable[[Any, Any, Any], Any] | None = None
) -> Callable[[Any, Any], Any]:
    def build(key: Any, raw: Any) -> Any:
        if isinstance(raw, _Built):
            return raw.value
        if isinstance(raw, _Moved):
            assert rebuild is not None  # Only `renamed` with `rebuild` makes them.
            return rebuild(key, raw.key, raw.stored)
        return load(key, raw)

    return build


def shallow_copy(value: dict[Any, Any]) -> dict[Any, Any]:
    """A copy of the dict `value` sharing its values; a `LazyDict`'s stored ones stay unbuilt."""
    if isinstance(value, LazyDict):
        return value.renamed({key: key for key in value}, lambda _key, built: built)
    return dict(value)


def materialized(value: Any) -> Any:
    """`value` with every value built, for readers of a dict's own storage (a serializer)."""
    if isinstance(value, LazyDict):
        value.materialize()
    return value


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a task's rows become objects.

    Loading a long task makes tens of thousands of objects and no garbage cycles, yet each
    allocation burst starts collections that walk every object the process holds: in a process
    holding another long task they cost as much as the load itself.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:  # Another thread that paused it too re-enables it when it is done.
            gc.enable()
