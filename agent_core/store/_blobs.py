"""Large text compressed for SQLite, as PostgreSQL's TOAST compresses it on its own.

A packed value is either the text itself (short, or written before compression existed) or a
BLOB: a one-byte marker then the zlib stream. SQLite keeps a value's type, so the type is the
marker's first half: old TEXT rows read as they are.
"""

from __future__ import annotations

import zlib

__all__ = ["pack", "unpack"]

_ZLIB = b"z"
_SMALL = 512
"""Below this many bytes compression saves little and costs a call each way."""


def pack(text: str) -> str | bytes:
    """`text` as stored: compressed when long enough to gain from it."""
    if len(text) < _SMALL:
        return text
    data = text.encode()
    packed = _ZLIB + zlib.compress(data, 1)  # Level 1: most of the gain, a fraction of the time.
    return packed if len(packed) < len(data) else text


def unpack(value: str | bytes) -> str:
    """The text of a stored value, packed or not."""
    if isinstance(value, str):
        return value
    if value[:1] != _ZLIB:
        raise ValueError(f"unknown blob marker {value[:1]!r}")
    return zlib.decompress(value[1:]).decode()
