"""Which event loop a message queue lives on, and how to run queue work there from anywhere.

An in-process queue (and a Redis client) is bound to the loop that first used it. Agents'
tools run on Stepwise's runtime loop, another thread, so a tool that talks to the queue
(`MetaServiceTool`, `ServiceAsTool`) hands its work to the queue's home loop. Components
record that loop when they start consuming.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

from stepwise.services.message_queues.base import BaseMessageQueue

__all__ = ["on_home_loop", "remember_home"]

T = TypeVar("T")

_homes: weakref.WeakKeyDictionary[BaseMessageQueue, asyncio.AbstractEventLoop] = (
    weakref.WeakKeyDictionary()
)


def remember_home(queue: BaseMessageQueue) -> None:
    """Record the running loop as `queue`'s home (called by components as they start)."""
    _homes[queue] = asyncio.get_running_loop()


async def on_home_loop(queue: BaseMessageQueue, coro: Coroutine[Any, Any, T]) -> T:
    """Await `coro` on `queue`'s home loop (the running loop when none is known or it closed)."""
    running = asyncio.get_running_loop()
    home = _homes.get(queue)
    if home is None or home is running or home.is_closed():
        _homes[queue] = running
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, home))
