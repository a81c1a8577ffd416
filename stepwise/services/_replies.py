"""Request and reply over a queue: publish a message, await the answer addressed back to us.

Each `ReplyInbox` consumes its own message type (`<prefix>.replies.<random>`), so replies
reach the very process that waits for them even when replicas of a service compete for its
requests. A reply nobody waits for any more (it came after the timeout) is dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from stepwise.services._home import on_home_loop, remember_home
from stepwise.services.message_queues.base import BaseMessageQueue, CallableMessageConsumer
from stepwise.services.messages import QueueMessage, new_id

__all__ = ["ReplyInbox"]


def _loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


class ReplyInbox:
    """Sends requests on `message_queue` and matches replies to them by a key.

    Args:
        message_queue: The queue.
        prefix: Names this inbox's message type (`<prefix>.replies.<random>`).
        key_of: Reads the request key from a reply message.
    """

    def __init__(
        self,
        message_queue: BaseMessageQueue,
        *,
        prefix: str,
        key_of: Callable[[QueueMessage], str | None],
    ) -> None:
        self.message_queue = message_queue
        self.reply_type = f"{prefix}.replies.{new_id()[:12]}"
        self._key_of = key_of
        self._waiting: dict[str, asyncio.Future[QueueMessage]] = {}
        self._consuming: asyncio.Task[None] | None = None

    async def request(
        self,
        message: QueueMessage,
        *,
        key: str,
        timeout: float,  # noqa: ASYNC109 - per request
    ) -> QueueMessage:
        """Publish `message` and return the reply carrying `key`.

        Raises:
            TimeoutError: No reply within `timeout` seconds.
        """
        return await on_home_loop(self.message_queue, self._request(message, key, timeout))

    async def _request(
        self,
        message: QueueMessage,
        key: str,
        timeout: float,  # noqa: ASYNC109 - per request
    ) -> QueueMessage:
        await self._start()
        reply = asyncio.get_running_loop().create_future()
        self._waiting[key] = reply
        try:
            await self.message_queue.publish(message)
            return await asyncio.wait_for(reply, timeout)
        finally:
            self._waiting.pop(key, None)

    async def _start(self) -> None:
        running = self._consuming
        if running is not None and not running.done() and running.get_loop() is _loop():
            return
        remember_home(self.message_queue)
        consumer = CallableMessageConsumer(message_type=self.reply_type, handler=self._on_reply)
        consume = await self.message_queue.register_consumer(consumer)
        self._consuming = asyncio.create_task(consume(), name=f"consume {self.reply_type}")

    def _on_reply(self, message: QueueMessage) -> None:
        key = self._key_of(message)
        waiter = self._waiting.get(key) if key is not None else None
        if waiter is not None and not waiter.done():
            waiter.set_result(message)

    async def close(self) -> None:
        """Stop consuming replies."""
        if self._consuming is not None:
            self._consuming.cancel()
            await asyncio.gather(self._consuming, return_exceptions=True)
            self._consuming = None
