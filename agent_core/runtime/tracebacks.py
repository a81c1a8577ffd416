"""The traceback of an exception raised by code that is not Stepwise's, as its author reads it.

A step that fails in the user's own worker, or inside another framework's agent, records where:
Python's traceback with the runtime's frames left out (they say only "a step ran"), kept whole
up to `MAX_TRACEBACK_CHARS` and otherwise cut from the top, since the raising frame is last;
when libraries' frames fill it (a framework's), the user's own frames are put first.
"""

from __future__ import annotations

import sysconfig
import traceback
from pathlib import Path

__all__ = ["MAX_TRACEBACK_CHARS", "foreign_traceback"]

MAX_TRACEBACK_CHARS = 8000

_OWN_FOLDER = str(Path(__file__).resolve().parents[1])
"""`agent_core`'s folder: frames under it are the runtime's (or the built-in workers')."""


_LIBRARY_FOLDERS = tuple(
    str(Path(folder).resolve())
    for folder in {sysconfig.get_paths()[name] for name in ("stdlib", "purelib", "platlib")}
)
"""Where installed packages and the standard library live: frames there are not the user's."""


def _is_own(filename: str) -> bool:
    return filename.startswith(_OWN_FOLDER) or filename.startswith("<frozen asyncio")


def foreign_traceback(exc: BaseException) -> str:
    """`exc` formatted as Python does, without the runtime's frames; "" if all were ours."""
    formatted = traceback.TracebackException.from_exception(exc)
    seen: set[int] = set()
    todo = [formatted]
    foreign = False
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        kept = [frame for frame in current.stack if not _is_own(frame.filename)]
        foreign = foreign or bool(kept)
        current.stack = traceback.StackSummary.from_list(kept)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    if not foreign:
        return ""
    text = "".join(formatted.format())
    if len(text) > MAX_TRACEBACK_CHARS:
        text = "…(earlier frames cut)\n" + text[-MAX_TRACEBACK_CHARS:]
    return _yours_first(formatted) + text


def _is_library(filename: str) -> bool:
    """Whether a frame is an installed package's or the standard library's, not the user's."""
    return filename.startswith(_LIBRARY_FOLDERS) or filename.startswith("<")


def _yours_first(formatted: traceback.TracebackException) -> str:
    """The user's own frames and the error, ahead of a traceback that a framework fills.

    A pydantic-ai agent's tool raises under ~50 of pydantic-ai's and asyncio's frames: its
    author looks for one line among them. "" when the traceback has no library frames to
    skip, or none of the user's.
    """
    frames = list(formatted.stack)
    yours = [frame for frame in frames if not _is_library(frame.filename)]
    if not yours or len(yours) == len(frames):
        return ""
    skipped = len(frames) - len(yours)
    lines = "".join(traceback.StackSummary.from_list(yours).format())
    error = "".join(formatted.format_exception_only())
    return (
        f"Your code ({skipped} frames of libraries left out; the full traceback follows):\n"
        f"{lines}{error}\n"
    )
