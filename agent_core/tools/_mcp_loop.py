"""The MCP loop: one event loop on a daemon thread that holds every MCP server's session.

An MCP session (the SDK's `Client`) is made of anyio tasks and streams bound to the loop that
opened it, and must be closed by the task that opened it. Streamlit runs each rerun on a new
thread and the runtime runs steps on its own loop, so neither may own one. Every session lives
here instead, for as long as the process: callers on any thread or loop hand coroutines over
(`submit`) and wait on the future, with a timeout of their own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from agent_core._loop_thread import start_loop_thread

__all__ = ["mcp_loop", "on_mcp_loop", "submit"]

T = TypeVar("T")

_guard = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def mcp_loop() -> asyncio.AbstractEventLoop:
    """The process's MCP loop, started on first use."""
    global _loop
    with _guard:
        if _loop is None or _loop.is_closed():
            _loop = start_loop_thread("stepwise-mcp")
        return _loop


def on_mcp_loop() -> bool:
    """Whether the caller runs on the MCP loop (where waiting on it would deadlock)."""
    try:
        return asyncio.get_running_loop() is _loop
    except RuntimeError:
        return False


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run `coro` on the MCP loop; cancelling the future cancels it there."""
    return asyncio.run_coroutine_threadsafe(coro, mcp_loop())
