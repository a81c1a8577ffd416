"""Turn a coroutine that reports events through a callback into an async stream of them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from agent_core.events import EventSink, StepEvent

__all__ = ["Finished", "relay_events"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Finished(Generic[T]):
    """The last item of `relay_events`: what the coroutine returned."""

    result: T


async def relay_events(
    run: Callable[[EventSink], Awaitable[T]],
) -> AsyncIterator[StepEvent | Finished[T]]:
    """Yield each event `run` emits as it happens, then `Finished(result)`.

    If `run` raises, the exception propagates after the events emitted before it. If the
    consumer stops early, `run` still finishes: a step is never left half-committed.
    """
    queue: asyncio.Queue[StepEvent | None] = asyncio.Queue()
    job = asyncio.ensure_future(run(queue.put_nowait))
    job.add_done_callback(lambda _: queue.put_nowait(None))
    try:
        while (event := await queue.get()) is not None:
            yield event
    finally:
        if not job.done():
            with contextlib.suppress(Exception):
                await job
    yield Finished(job.result())
