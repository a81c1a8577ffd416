"""The contract every message queue keeps: publish, competing consumers, retry, dead letters.

Delivery is at least once: a message is acknowledged only after its handler returned, and a
handler that raises gets it again, up to `max_deliveries` times; then it goes to the type's
dead letters and the control plane is told (`ActionTypes.DEAD_LETTER`), so the task fails
with the reason instead of being retried forever. Consumers of one type compete: each
message goes to one of them. Handlers must be idempotent by `QueueMessage.id_`.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stepwise.services.messages import CONTROL_PLANE, ActionTypes, QueueMessage, new_id

__all__ = [
    "BaseMessageQueue",
    "BaseMessageQueueConsumer",
    "CallableMessageConsumer",
    "DeadLetter",
    "StartConsumingCallable",
]

StartConsumingCallable = Callable[[], Awaitable[None]]
"""Awaiting it consumes messages until the task awaiting it is cancelled."""


class DeadLetter(BaseModel):
    """A message whose handler failed `max_deliveries` times, and the last failure."""

    message: QueueMessage
    reason: str
    failed_at: float = Field(default_factory=time.time)


class BaseMessageQueueConsumer(BaseModel, ABC):
    """Handles the messages of one type; raising means "not handled: deliver it again"."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id_: str = Field(default_factory=new_id)
    message_type: str = "default"

    async def process_message(self, message: QueueMessage) -> None:
        """Handle one message (the queue acknowledges it when this returns)."""
        await self._process_message(message)

    @abstractmethod
    async def _process_message(self, message: QueueMessage) -> None: ...


class CallableMessageConsumer(BaseMessageQueueConsumer):
    """A consumer whose handler is a function, sync or async."""

    handler: Callable[[QueueMessage], Any]

    async def _process_message(self, message: QueueMessage) -> None:
        result = self.handler(message)
        if inspect.isawaitable(result):
            await result


class BaseMessageQueue(ABC):
    """Publishes messages to the consumers of their type."""

    def __init__(self, *, max_deliveries: int = 5, notify_dead_letters_to: str = CONTROL_PLANE):
        if max_deliveries < 1:
            raise ValueError("max_deliveries must be at least 1")
        self.max_deliveries = max_deliveries
        self.notify_dead_letters_to = notify_dead_letters_to

    async def publish(self, message: QueueMessage) -> None:
        """Publish `message` to the consumers of `message.type` (kept until one handles it)."""
        await self._publish(message.stamped())

    @abstractmethod
    async def _publish(self, message: QueueMessage) -> None: ...

    @abstractmethod
    async def register_consumer(self, consumer: BaseMessageQueueConsumer) -> StartConsumingCallable:
        """Register `consumer`; await the returned callable to consume until cancelled."""

    @abstractmethod
    async def deregister_consumer(self, consumer: BaseMessageQueueConsumer) -> None:
        """Stop delivering to `consumer` (its unacknowledged messages go to the others)."""

    @abstractmethod
    async def dead_letters(self, message_type: str) -> list[DeadLetter]:
        """The dead letters of `message_type`, oldest first."""

    async def has_live_consumer(self, message_type: str) -> bool:
        """Whether a live consumer reads `message_type` (the control plane's hop watch asks).

        True unless the queue knows otherwise: a queue that cannot tell never has its hops
        timed out.
        """
        return True

    async def lost_messages(self) -> bool:
        """Whether the queue lost messages it had accepted since this was last asked.

        The control plane's hop watch asks, and sends the hops in flight again when it did
        (Redis restarted without persistence). False unless the queue can tell.
        """
        return False

    async def launch_local(self) -> asyncio.Task | None:
        """Start whatever the queue runs in this process; None when it needs nothing."""
        return None

    async def close(self) -> None:  # noqa: B027 - a queue with nothing to release keeps it.
        """Release connections and background work."""

    async def _handle(self, consumer: BaseMessageQueueConsumer, message: QueueMessage) -> bool:
        """Run the handler; True when the message is done with (handled or dead-lettered)."""
        started = time.time()
        try:
            await consumer.process_message(message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # Any handler failure: retried, then dead-lettered.
            if message.delivery_count < self.max_deliveries:
                return False
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            await self._dead_letter(message, reason)
            return True
        message.stats.process_start_time = started
        message.stats.process_end_time = time.time()
        return True

    async def _dead_letter(self, message: QueueMessage, reason: str) -> None:
        """Keep the message as a dead letter and tell the control plane why it failed."""
        await self._store_dead_letter(DeadLetter(message=message, reason=reason))
        if message.type == self.notify_dead_letters_to:
            return  # The control plane's own message: nobody else to tell.
        notice = QueueMessage(
            publisher_id="message_queue",
            type=self.notify_dead_letters_to,
            action=ActionTypes.DEAD_LETTER,
            data={"message": message.model_dump(mode="json"), "reason": reason},
        )
        await self.publish(notice)

    @abstractmethod
    async def _store_dead_letter(self, letter: DeadLetter) -> None: ...
