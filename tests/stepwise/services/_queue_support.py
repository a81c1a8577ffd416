"""Helpers for the queue tests: a recording consumer, consuming in the background, polling."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from stepwise.services import BaseMessageQueue, CallableMessageConsumer, QueueMessage


@dataclass
class Recorder:
    """Records each delivery; fails the first `failures` deliveries of every message."""

    failures: int = 0
    delay: float = 0.0
    deliveries: list[QueueMessage] = field(default_factory=list)
    handled: list[QueueMessage] = field(default_factory=list)

    async def __call__(self, message: QueueMessage) -> None:
        self.deliveries.append(message)
        if self.delay:
            await asyncio.sleep(self.delay)
        if sum(m.id_ == message.id_ for m in self.deliveries) <= self.failures:
            raise ValueError(f"boom on delivery {message.delivery_count}")
        self.handled.append(message)

    def consumer(self, message_type: str) -> CallableMessageConsumer:
        return CallableMessageConsumer(message_type=message_type, handler=self)

    def counts(self, message_id: str) -> list[int]:
        return [m.delivery_count for m in self.deliveries if m.id_ == message_id]


@asynccontextmanager
async def consuming(
    queue: BaseMessageQueue, consumer: CallableMessageConsumer, *, replicas: int = 1
) -> AsyncIterator[list[asyncio.Task[None]]]:
    """Run `replicas` consuming loops of `consumer` for the duration of the block."""
    start = await queue.register_consumer(consumer)
    tasks = [asyncio.create_task(start()) for _ in range(replicas)]
    try:
        yield tasks
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def wait_until(condition: Callable[[], object], *, within: float = 10.0) -> None:
    """Poll `condition` until it is true; fail the test after `within` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {within} s")
        await asyncio.sleep(0.01)
