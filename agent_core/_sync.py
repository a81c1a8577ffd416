"""Sync wrappers over the async core: one event loop per thread, reused for every call.

`asyncio.run` per step would build and tear down a loop each time (tens of microseconds, and
it closes the default executor); a thread-local loop costs nothing after the first call.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

from agent_core.errors import UserError

__all__ = ["iterate_sync", "run_sync"]

T = TypeVar("T")

_local = threading.local()


def _thread_loop(name: str) -> asyncio.AbstractEventLoop:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise UserError(
            f"{name}() cannot run inside a running event loop (async code or a notebook); "
            f"use `await a{name}(...)` instead"
        )
    loop = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _local.loop = loop
    return loop


def run_sync(coro: Coroutine[Any, Any, T], *, name: str) -> T:
    """Run `coro` to completion on this thread's loop; `name` is the sync method's name."""
    try:
        loop = _thread_loop(name)
    except UserError:
        coro.close()
        raise
    return loop.run_until_complete(coro)


def iterate_sync(stream: AsyncIterator[T], *, name: str) -> Iterator[T]:
    """Drive an async iterator from sync code, one item per loop turn."""
    loop = _thread_loop(name)
    try:
        while True:
            try:
                yield loop.run_until_complete(anext(stream))
            except StopAsyncIteration:
                return
    finally:
        # A consumer that stops early must still let the step finish and commit.
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            loop.run_until_complete(aclose())
