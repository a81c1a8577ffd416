"""`SimpleMessageQueue`: the embedded queue, in this process, on asyncio (no server).

Unlike llama-agents' queue it neither polls nor refuses a type with no consumer yet: a
message waits for its first consumer. A consumer that fails a message hands it back to the
type's queue for any consumer of the type to take again.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

from stepwise.services.message_queues.base import (
    BaseMessageQueue,
    BaseMessageQueueConsumer,
    DeadLetter,
    StartConsumingCallable,
)
from stepwise.services.messages import CONTROL_PLANE, QueueMessage

__all__ = ["SimpleMessageQueue"]


class SimpleMessageQueue(BaseMessageQueue):
    """An in-process queue: one asyncio queue per message type, consumers compete on it.

    Use it from one event loop (the one that publishes and consumes).
    """

    def __init__(self, *, max_deliveries: int = 5, notify_dead_letters_to: str = CONTROL_PLANE):
        super().__init__(
            max_deliveries=max_deliveries, notify_dead_letters_to=notify_dead_letters_to
        )
        self._queues: dict[str, asyncio.Queue[QueueMessage]] = defaultdict(asyncio.Queue)
        self._consumers: dict[str, BaseMessageQueueConsumer] = {}
        self._dead: dict[str, list[DeadLetter]] = defaultdict(list)

    async def _publish(self, message: QueueMessage) -> None:
        await self._queues[message.type].put(message)

    async def register_consumer(self, consumer: BaseMessageQueueConsumer) -> StartConsumingCallable:
        """Register `consumer`; await the returned callable to consume until cancelled."""
        self._consumers[consumer.id_] = consumer

        async def start_consuming() -> None:
            queue = self._queues[consumer.message_type]
            while consumer.id_ in self._consumers:
                message = await queue.get()
                if consumer.id_ not in self._consumers:
                    queue.put_nowait(message)  # Deregistered while waiting: another's to take.
                    return
                try:
                    done = await self._handle(consumer, message)
                except BaseException:
                    queue.put_nowait(message)  # Cancelled mid-handling: not acknowledged.
                    raise
                if not done:
                    count = message.delivery_count + 1
                    queue.put_nowait(message.model_copy(update={"delivery_count": count}))

        return start_consuming

    async def deregister_consumer(self, consumer: BaseMessageQueueConsumer) -> None:
        """Stop delivering to `consumer` after the message it is handling."""
        self._consumers.pop(consumer.id_, None)

    async def has_live_consumer(self, message_type: str) -> bool:
        """Whether a consumer of `message_type` is registered (in this process: alive)."""
        return any(c.message_type == message_type for c in self._consumers.values())

    async def dead_letters(self, message_type: str) -> list[DeadLetter]:
        """The dead letters of `message_type`, oldest first."""
        return list(self._dead[message_type])

    async def _store_dead_letter(self, letter: DeadLetter) -> None:
        self._dead[letter.message.type].append(letter)

    def pending(self, message_type: str) -> int:
        """Messages of `message_type` waiting for a consumer."""
        return self._queues[message_type].qsize()
