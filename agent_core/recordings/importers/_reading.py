"""Reading a file to import: bounded in size and depth, JSON or JSON lines, text made storable.

Nothing read here is ever run, imported or fetched: a file is data. Its size is checked before
it is read (a path's by `stat`), JSON lines are read one line at a time, and each parsed value
is checked for depth (a store reads back about 200 levels) and cleaned of lone surrogates (no
store, file or wire can encode them), which are replaced with U+FFFD and counted.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from agent_core._nesting import too_deep
from agent_core.recordings.importers.errors import TraceImportError

__all__ = ["MAX_IMPORT_BYTES", "MAX_NESTING_LEVELS", "Source", "open_source", "parse_json"]

_MB = 1024 * 1024
MAX_IMPORT_BYTES = 50 * _MB
"""The largest file `import_file` reads (50 MB), whole or as JSON lines."""
MAX_NESTING_LEVELS = 150
"""Deepest nesting of one JSON value read from a file (a document, a line, an attribute)."""
_REPLACEMENT = "\ufffd"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class Source:
    """A file to import: its name for messages, and its bytes, opened on demand."""

    name: str
    size: int
    path: Path | None = None
    data: bytes | None = None
    surrogates: int = 0
    """Lone surrogates replaced in what was read so far."""

    def open(self) -> IO[bytes]:
        """The bytes, from the start."""
        if self.data is not None:
            return io.BytesIO(self.data)
        assert self.path is not None
        return self.path.open("rb")

    def head(self, size: int = 4096) -> bytes:
        """The first `size` bytes, without a byte-order mark or leading white space."""
        with self.open() as stream:
            return stream.read(size).removeprefix(b"\xef\xbb\xbf").lstrip()

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """Each non-blank line and its number, one at a time."""
        with self.open() as stream:
            for number, line in enumerate(stream, start=1):
                if line.strip():
                    yield number, line

    def read_all(self) -> bytes:
        """The whole file (its size was checked when it was opened)."""
        with self.open() as stream:
            return stream.read()

    def error(self, message: str, **kwargs: Any) -> TraceImportError:
        """A `TraceImportError` about this file."""
        return TraceImportError(message, file=self.name, **kwargs)


def mapping(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (traces omit or mistype fields)."""
    return value if isinstance(value, dict) else {}


def open_source(source: str | os.PathLike[str] | bytes, *, name: str = "") -> Source:
    """A file to import, by path or as its bytes, refused when over `MAX_IMPORT_BYTES`.

    Raises:
        TraceImportError: No such file, a folder, or too large (code `trace_too_large`).
    """
    if isinstance(source, bytes | bytearray):
        found = Source(name=name or "the upload", size=len(source), data=bytes(source))
    else:
        path = Path(source)
        if not path.is_file():
            raise TraceImportError(
                f"{str(path)!r} is not a file", file=str(path), hint="give a trace file's path"
            )
        found = Source(name=name or str(path), size=path.stat().st_size, path=path)
    if found.size > MAX_IMPORT_BYTES:
        raise found.error(
            f"{found.name} is {found.size / _MB:.1f} MB; files over {MAX_IMPORT_BYTES // _MB} MB "
            "are refused",
            code="trace_too_large",
            hint="export fewer traces into one file (one trace, or a shorter time range)",
            params={"what": "file size", "size": found.size, "limit": MAX_IMPORT_BYTES},
        )
    return found


def parse_json(source: Source, raw: bytes | str, *, line: int | None = None) -> Any:
    """One JSON value of `source`, checked for encoding, depth and lone surrogates.

    Raises:
        TraceImportError: Not UTF-8, not JSON, cut short, or nested too deep.
    """
    where = f" at line {line}" if line is not None else ""
    line_param = {"line": line} if line is not None else {}
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise source.error(
                f"{source.name} is not UTF-8 text (a bad byte at offset {exc.start}{where})",
                params={"detail": "not UTF-8", **line_param},
            ) from None
    try:
        value = json.loads(raw, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise source.error(
            f"{source.name} is not valid JSON{where} ({exc.msg} at line {exc.lineno}, column "
            f"{exc.colno}); it may be cut short",
            hint="export the trace again; JSON lines need one whole JSON object per line",
            params={"detail": exc.msg, **line_param},
        ) from None
    except RecursionError:
        raise _too_deep(source, where) from None
    except ValueError as exc:  # NaN or Infinity.
        raise source.error(f"{source.name} is not JSON{where}: {exc}") from None
    if too_deep(value, MAX_NESTING_LEVELS):
        raise _too_deep(source, where)
    value, replaced = _scrubbed(value)
    source.surrogates += replaced
    return value


def parse_embedded(source: Source, text: Any, *, span: str, field: str) -> Any:
    """A JSON value held as text inside a trace (an attribute, an input); the text if not JSON."""
    if not isinstance(text, str) or text[:1] not in ("{", "["):
        return text
    try:
        return parse_json(source, text)
    except TraceImportError as exc:
        if exc.code == "trace_too_deep":
            exc.params.update(span=span, field=field)
            raise
        return text


def _too_deep(source: Source, where: str) -> TraceImportError:
    return source.error(
        f"{source.name} nests more than {MAX_NESTING_LEVELS} levels deep{where}: no trace "
        "Stepwise reads is that deep, nor could a task holding it be stored",
        code="trace_too_deep",
        params={"limit": MAX_NESTING_LEVELS},
    )


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _scrubbed(value: Any) -> tuple[Any, int]:
    """`value` with every lone surrogate in its strings replaced, and how many were."""
    if isinstance(value, str):
        return _clean_text(value)
    if isinstance(value, list):
        count = 0
        items = []
        for item in value:
            cleaned, found = _scrubbed(item)
            items.append(cleaned)
            count += found
        return items, count
    if isinstance(value, dict):
        count = 0
        fields = {}
        for key, item in value.items():
            clean_key, in_key = _clean_text(key)
            fields[clean_key], found = _scrubbed(item)
            count += in_key + found
        return fields, count
    return value, 0


def _clean_text(text: str) -> tuple[str, int]:
    # json.loads joins a valid pair into one character: any surrogate left in a str is lone.
    return _LONE_SURROGATE.subn(_REPLACEMENT, text)
