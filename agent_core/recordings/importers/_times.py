"""Timestamps as Langfuse and LangSmith write them (ISO 8601), read leniently."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = ["latency_ms", "parse_time", "seconds"]


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 time (a trailing `Z` too), in UTC when it names no zone; None if not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def seconds(value: datetime | None) -> float:
    """`value` as seconds since the epoch; 0 when unknown."""
    return value.timestamp() if value is not None else 0.0


def latency_ms(start: datetime | None, end: datetime | None) -> float:
    """The time between two moments in milliseconds; 0 when either is unknown."""
    if start is None or end is None:
        return 0.0
    return max((end - start).total_seconds() * 1000, 0.0)
