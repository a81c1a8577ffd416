"""One consuming loop of a Redis Streams queue: a named member of its message type's group.

The loop takes a message another consumer left unacknowledged for longer than the
visibility timeout (XAUTOCLAIM) before it reads new ones (XREADGROUP), handles one message
at a time, renews the lease of the message it is handling so a slow handler keeps it, and
acknowledges (XACK) only after the handler returned or the message was dead-lettered. A
failed message is handed back at once (made claimable) rather than after the timeout.
Redis's pending-entries list counts deliveries, so a redelivery after a crash counts too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from redis.exceptions import ResponseError

from stepwise.services.message_queues._redis_client import (
    RETRYABLE_ERRORS,
    Backoff,
    RedisStreamsSettings,
    honour_swallowed_cancel,
    new_client,
)
from stepwise.services.message_queues.base import DeadLetter
from stepwise.services.message_queues.signing import SIGNATURE_FIELD, verified
from stepwise.services.messages import QueueMessage, new_id

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from stepwise.services.message_queues.base import BaseMessageQueue, BaseMessageQueueConsumer

__all__ = ["StreamConsumer"]

logger = logging.getLogger("stepwise.services.message_queues.redis_streams")

# Claims the next message idle past the timeout and reads its delivery count in one atomic
# step, so the count a handler sees is the count Redis recorded for that delivery.
_CLAIM = """
local r = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', 1)
local out = {}
for _, e in ipairs(r[2]) do
  if e[2] then
    local p = redis.call('XPENDING', KEYS[1], ARGV[1], e[1], e[1], 1)
    table.insert(out, {e[1], e[2], p[1][4]})
  end
end
return {r[1], out, r[3]}
"""

# XCLAIM on a message only while this consumer still owns it: renewing the lease (JUSTID
# resets its idle time, keeping the count) or handing it back (IDLE makes it claimable now).
_RECLAIM_OWN = """
local own = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1, ARGV[2])
if #own == 0 then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], unpack(ARGV, 4))
return 1
"""

_CLEANUP_TIMEOUT = 2.0


@dataclass
class _Delivery:
    entry_id: str
    fields: dict[str, str]
    count: int


class StreamConsumer:
    """Consumes one message type's stream for one consumer until stopped or cancelled."""

    def __init__(
        self,
        queue: BaseMessageQueue,
        consumer: BaseMessageQueueConsumer,
        settings: RedisStreamsSettings,
    ):
        self._queue = queue
        self._consumer = consumer
        self._settings = settings
        self._type = consumer.message_type
        self._stream = settings.stream(consumer.message_type)
        self._group = consumer.message_type
        # Unique per loop: replicas and restarts never share a pending-entries list.
        self.name = f"{consumer.id_[:12]}-{os.getpid()}-{new_id()[:8]}"
        self.stopping = False
        self._client: aioredis.Redis | None = None
        self._cursor = "0-0"
        self._next_claim = 0.0
        self._needs_group = True

    @property
    def client(self) -> aioredis.Redis:
        """This loop's own client (made inside the loop, so bound to the right event loop)."""
        if self._client is None:
            raise RuntimeError("the consumer is not running")
        return self._client

    async def run(self) -> None:
        """Consume until `stopping` is set or the task is cancelled; survive Redis restarts."""
        self._client = new_client(self._settings)
        backoff = Backoff(cap=self._settings.max_backoff)
        try:
            while not self.stopping:
                honour_swallowed_cancel()
                try:
                    await self._step()
                except ResponseError as exc:
                    if "NOGROUP" not in str(exc):
                        raise
                    # Redis lost the group while a message was in hand (it restarted empty):
                    # the acknowledgement has nothing to settle; make the group again.
                    logger.warning("consumer %s: the group of %s is gone", self.name, self._stream)
                    self._needs_group = True
                except RETRYABLE_ERRORS as exc:
                    delay = backoff.next_delay()
                    logger.warning("consumer %s lost Redis (%s); retrying", self.name, exc)
                    await asyncio.sleep(delay)
                else:
                    backoff.reset()
        finally:
            await self._shutdown()

    async def _step(self) -> None:
        if self._needs_group:
            await ensure_group(self.client, self._stream, self._group)
            self._needs_group = False
        try:
            delivery = await self._claim_due() or await self._read_new()
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            self._needs_group = True  # The stream was deleted or Redis lost its data.
            return
        if delivery is None:
            return
        if self.stopping:
            await self._hand_back(delivery)
            return
        await self._deliver(delivery)

    async def _claim_due(self) -> _Delivery | None:
        if time.monotonic() < self._next_claim:
            return None
        min_idle = str(int(self._settings.visibility_timeout * 1000))
        cursor, entries, deleted = await self.client.eval(
            _CLAIM, 1, self._stream, self._group, self.name, min_idle, self._cursor
        )
        self._cursor = cursor
        if deleted:
            logger.warning(
                "stream %s trimmed %d pending message(s) before they were handled: raise "
                "maxlen above the backlog",
                self._stream,
                len(deleted),
            )
        if not entries:
            if cursor == "0-0":  # A full pass found nothing due: rest until the next one.
                self._next_claim = time.monotonic() + self._settings.claim_interval
            return None
        entry_id, flat, count = entries[0]
        return _Delivery(entry_id, _pairs(flat), int(count))

    async def _read_new(self) -> _Delivery | None:
        until_claim = max(0.0, self._next_claim - time.monotonic())
        block = max(1, min(self._settings.block_ms, int(until_claim * 1000)))
        reply = await self.client.xreadgroup(
            self._group, self.name, {self._stream: ">"}, count=1, block=block
        )
        for _stream, entries in reply or []:
            for entry_id, fields in entries:
                return _Delivery(entry_id, fields, 1)
        return None

    async def _deliver(self, delivery: _Delivery) -> None:
        message = await self._message_or_dead_letter(delivery)
        if message is None:
            return
        lease = asyncio.create_task(self._renew_lease(delivery.entry_id))
        try:
            done = await self._queue._handle(self._consumer, message)
        except Exception:
            # Not the handler (its failures are retries): dead-lettering could not reach
            # Redis. Hand it back; its next delivery is past max_deliveries and dead-letters.
            logger.exception("consumer %s could not finish %s", self.name, delivery.entry_id)
            done = False
        except BaseException:
            await self._cleanup(self._hand_back(delivery))
            raise
        finally:
            # Not awaited: awaiting it would be a point where a cancellation of this loop
            # lands between a handler's success and its acknowledgement.
            lease.cancel()
        settle = self._ack if done else self._hand_back
        try:
            await self._until_done(lambda: settle(delivery))
        except asyncio.CancelledError:
            await self._cleanup(settle(delivery))  # Stopping: one bounded last attempt.
            raise
        if not done:
            self._next_claim = 0.0  # Retry soon, here or in any other replica.

    async def _message_or_dead_letter(self, delivery: _Delivery) -> QueueMessage | None:
        """The delivered message, or None when it went to the dead letters unhandled."""
        if not self._signed(delivery):
            await self._drop_forged(delivery)
            return None
        try:
            message = QueueMessage.model_validate_json(delivery.fields.get("message", ""))
        except ValidationError as exc:
            unreadable = QueueMessage(type=self._type, data={"entry": delivery.fields})
            reason = f"not a QueueMessage: {exc.error_count()} validation error(s)"
            await self._dead_letter_and_ack(delivery, unreadable, reason)
            return None
        message = message.model_copy(update={"delivery_count": delivery.count})
        if delivery.count > self._queue.max_deliveries:
            # Its consumers died while handling it each time (SIGKILL, out of memory):
            # running it again would only kill another one.
            reason = (
                f"delivered {delivery.count} times without being acknowledged: its "
                "consumer stopped while handling it each time"
            )
            await self._dead_letter_and_ack(delivery, message, reason)
            return None
        return message

    def _signed(self, delivery: _Delivery) -> bool:
        key = self._settings.signing_key
        if key is None:
            return True
        payload = delivery.fields.get("message", "")
        return verified(key, payload, delivery.fields.get(SIGNATURE_FIELD))

    async def _drop_forged(self, delivery: _Delivery) -> None:
        """Keep an unsigned or forged message's entry id as a dead letter; tell nobody.

        Telling the control plane would let a forger fail any task it names.
        """
        logger.warning(
            "consumer %s dropped entry %s of %s: its signature is missing or wrong (a part "
            "with another STEPWISE_API_TOKEN, or a message written to Redis by someone else)",
            self.name, delivery.entry_id, self._stream,
        )  # fmt: skip
        unsigned = QueueMessage(type=self._type, data={"entry_id": delivery.entry_id})
        letter = DeadLetter(message=unsigned, reason="missing or wrong signature")
        await self._until_done(lambda: self._queue._store_dead_letter(letter))
        await self._until_done(lambda: self._ack(delivery))

    async def _dead_letter_and_ack(
        self, delivery: _Delivery, message: QueueMessage, reason: str
    ) -> None:
        await self._until_done(lambda: self._queue._dead_letter(message, reason))
        await self._until_done(lambda: self._ack(delivery))

    async def _renew_lease(self, entry_id: str) -> None:
        """Keep the message being handled from looking abandoned while its handler runs."""
        while True:
            await asyncio.sleep(self._settings.visibility_timeout / 3)
            try:
                owned = await self._reclaim_own(entry_id, "JUSTID")
            except RETRYABLE_ERRORS:
                continue
            except ResponseError:  # The group is gone (Redis lost its data): nothing to keep.
                return
            if not owned:
                logger.warning("consumer %s lost %s to another consumer", self.name, entry_id)
                return

    async def _hand_back(self, delivery: _Delivery) -> None:
        """Make the message claimable now, with the delivery count it has."""
        idle = str(int(self._settings.visibility_timeout * 1000) + 1)
        await self._reclaim_own(
            delivery.entry_id, "IDLE", idle, "RETRYCOUNT", str(delivery.count), "JUSTID"
        )

    async def _reclaim_own(self, entry_id: str, *options: str) -> bool:
        owned = await self.client.eval(
            _RECLAIM_OWN, 1, self._stream, self._group, self.name, entry_id, *options
        )
        return bool(owned)

    async def _ack(self, delivery: _Delivery) -> None:
        await self.client.xack(self._stream, self._group, delivery.entry_id)

    async def _until_done(self, operation: Callable[[], Awaitable[Any]]) -> None:
        """Run `operation`, waiting out a Redis outage for as long as it lasts."""
        backoff = Backoff(cap=self._settings.max_backoff)
        while True:
            honour_swallowed_cancel()
            try:
                await operation()
            except RETRYABLE_ERRORS as exc:
                logger.warning("consumer %s waits for Redis (%s)", self.name, exc)
                await asyncio.sleep(backoff.next_delay())
            else:
                honour_swallowed_cancel()
                return

    async def _cleanup(self, operation: Awaitable[Any]) -> None:
        """Best-effort work while stopping: bounded in time, never raising.

        It runs as its own task and a cancellation of this one does not cut it short: the
        acknowledgement or hand-back it carries is what keeps a message from waiting out the
        visibility timeout or being handled twice.
        """
        work = asyncio.ensure_future(operation)
        deadline = asyncio.get_running_loop().time() + _CLEANUP_TIMEOUT
        while not work.done():
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                work.cancel()
                return
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([work], timeout=remaining)
        if not work.cancelled() and work.exception() is not None:
            logger.debug("consumer %s: cleanup failed: %s", self.name, work.exception())

    async def _shutdown(self) -> None:
        if self._client is None:
            return
        await self._cleanup(self._forget_name())
        await self._cleanup(self._client.aclose())
        self._client = None
        honour_swallowed_cancel()  # A cancellation that came while cleaning up.

    async def _forget_name(self) -> None:
        """Drop this consumer's name from the group, unless messages still wait in its name."""
        pending = await self.client.xpending_range(
            self._stream, self._group, min="-", max="+", count=1, consumername=self.name
        )
        if not pending:  # Deleting a consumer would drop its pending messages for good.
            await self.client.xgroup_delconsumer(self._stream, self._group, self.name)


async def ensure_group(client: aioredis.Redis, stream: str, group: str) -> None:
    """Create `group` on `stream` (and the stream), reading from its start; fine if it exists.

    From the start, so messages published before any consumer registered are not skipped.
    """
    try:
        await client.xgroup_create(stream, group, id="0", mkstream=True)
    except ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


def _pairs(flat: list[str]) -> dict[str, str]:
    return dict(zip(flat[::2], flat[1::2], strict=True))
