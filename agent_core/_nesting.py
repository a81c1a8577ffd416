"""How deep JSON-like data nests, measured without recursion.

pydantic writes JSON nested about 254 levels deep but reads back only about 200, so data that
enters from a model or a person is bounded well below that: whatever is stored must load.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_NESTING", "too_deep"]

MAX_NESTING = 64
"""Deepest nesting of lists and objects accepted in tool arguments and step inputs."""


def too_deep(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether `value` nests lists, tuples and dicts more than `limit` levels deep."""
    level: list[Any] = [value]
    for _ in range(limit + 1):
        inner: list[Any] = []
        for item in level:
            if isinstance(item, dict):
                inner.extend(item.values())
            elif isinstance(item, list | tuple):
                inner.extend(item)
        if not inner:
            return False
        level = inner
    return True
