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
    LOST_MARK,
    RETRYABLE_ERRORS,
    Backoff,
    RedisStreamsSettings,
    honour_swallowed_cancel,
    new_client,
)
from stepwise.services.message_queues.base import DeadLetter
from stepwise.services.message_queues.signing import (
    ADDRESSEE_FIELD,
    HOP_FIELD,
    MESSAGE_FIELD,
    Refusal,
    refusal,
)
from stepwise.services.messages import QueueMessage, hop_id_of, new_id

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from stepwise.services.message_queues.base import BaseMessageQueue, BaseMessageQueueConsumer

__all__ = ["StreamConsumer", "ensure_group", "is_lost_key"]

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
        self._lost = ""  # Why the group was lost, until it is made again.

    @property
    def client(self) -> aioredis.Redis:
        """This loop's own client (made inside the loop, so bound to the right event loop)."""
        if self._client is None:
            raise RuntimeError("the consumer is not running")
        return self._client

    async def run(self) -> None:
        """Consume until `stopping` is set or the task is cancelled; survive Redis restarts.

        Nothing Redis answers ends the loop: a consumer that stopped would leave its service,
        or the control plane, deaf with nobody told.
        """
        self._client = new_client(self._settings)
        backoff = Backoff(cap=self._settings.max_backoff)
        try:
            while not self.stopping:
                honour_swallowed_cancel()
                try:
                    await self._step()
                except ResponseError as exc:
                    if is_lost_key(exc):
                        self._lose_group(exc)
                        continue
                    logger.error(
                        "consumer %s of %s: Redis refused a command (%s); retrying",
                        self.name, self._stream, exc,
                    )  # fmt: skip
                    await asyncio.sleep(backoff.next_delay())
                except RETRYABLE_ERRORS as exc:
                    delay = backoff.next_delay()
                    logger.warning("consumer %s lost Redis (%s); retrying", self.name, exc)
                    await asyncio.sleep(delay)
                else:
                    backoff.reset()
        finally:
            await self._shutdown()

    def _lose_group(self, exc: ResponseError) -> None:
        """Note that the stream or its group is gone; the next step makes them again."""
        self._needs_group = True
        self._lost = self._lost or str(exc)

    async def _step(self) -> None:
        if self._needs_group:
            await self._make_group()
        delivery = await self._claim_due() or await self._read_new()
        if delivery is None:
            return
        if self.stopping:
            await self._hand_back(delivery)
            return
        await self._deliver(delivery)

    async def _make_group(self) -> None:
        """Create the group (and stream); after a loss, tell the control plane's hop watch."""
        await ensure_group(self.client, self._stream, self._group)
        if self._lost:
            await self._tell_lost()
        self._needs_group = False  # Only now: a failure above is retried at the next step.

    async def _tell_lost(self) -> None:
        """Mark the epoch key lost, so the hop watch (in any process) re-sends the hops in flight.

        It sends them as after a Redis that restarted empty. Messages in the lost stream are
        gone; their handlers deduplicate the re-sent ones by
        id. A plain SET, which the README's ACL allows (it does not allow DEL).
        """
        mark = f"{LOST_MARK}{self._stream} {time.time()}"
        try:
            await self.client.set(self._settings.epoch_key, mark)
        except ResponseError as exc:  # NOPERM: say so, and keep consuming all the same.
            logger.error(
                "consumer %s could not mark %s lost (%s): the control plane will not send "
                "its hops in flight again; grant the queue's user SET on it",
                self.name, self._settings.epoch_key, exc,
            )  # fmt: skip
        else:
            logger.warning(
                "consumer %s: the stream %s or its group %s was gone (Redis said %r: "
                "FLUSHALL, DEL, an eviction, or a restart without data); recreated it "
                "(XGROUP CREATE ... MKSTREAM) and told the control plane to send its hops "
                "in flight again",
                self.name, self._stream, self._group, self._lost,
            )  # fmt: skip
        self._lost = ""

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
            await self._until_done(lambda: _unless_lost(settle(delivery)))
        except asyncio.CancelledError:
            await self._cleanup(settle(delivery))  # Stopping: one bounded last attempt.
            raise
        if not done:
            self._next_claim = 0.0  # Retry soon, here or in any other replica.

    async def _message_or_dead_letter(self, delivery: _Delivery) -> QueueMessage | None:
        """The delivered message, or None when it went to the dead letters unhandled."""
        if (refused := self._refusal(delivery)) is not None:
            await self._refuse(delivery, refused)
            return None
        try:
            message = QueueMessage.model_validate_json(delivery.fields.get(MESSAGE_FIELD, ""))
        except ValidationError as exc:
            unreadable = QueueMessage(type=self._type, data={"entry": delivery.fields})
            reason = f"not a QueueMessage: {exc.error_count()} validation error(s)"
            await self._dead_letter_and_ack(delivery, unreadable, reason)
            return None
        if (refused := self._misrouted(delivery, message)) is not None:
            await self._refuse(delivery, refused)
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

    def _refusal(self, delivery: _Delivery) -> Refusal | None:
        key = self._settings.signing_key
        if key is None:
            return None
        return refusal(key, delivery.fields, stream=self._stream)

    def _misrouted(self, delivery: _Delivery, message: QueueMessage) -> Refusal | None:
        """Why a message addressed elsewhere than this stream may not be handled here."""
        if message.type != self._type:
            return Refusal(
                "addressed to another consumer",
                f"it is addressed to {message.type!r} and was written to {self._stream}",
            )
        if self._settings.signing_key is None:
            return None
        signed = (delivery.fields.get(ADDRESSEE_FIELD), delivery.fields.get(HOP_FIELD))
        if signed != (message.type, hop_id_of(message)):
            # The signature is good, so a publisher signed routing its message contradicts.
            return Refusal(
                "signed for another addressee or hop",
                f"it was signed for {signed[0]!r} (hop {signed[1]!r}) but names "
                f"{message.type!r} (hop {hop_id_of(message)!r})",
            )
        return None

    async def _refuse(self, delivery: _Delivery, refused: Refusal) -> None:
        """Keep a refused entry as a dead letter and acknowledge it; tell nobody.

        Telling the control plane would let a forger fail any task it names.
        """
        logger.warning(
            "consumer %s refused entry %s of %s: %s",
            self.name, delivery.entry_id, self._stream, refused.detail,
        )  # fmt: skip
        refused_message = QueueMessage(type=self._type, data={"entry_id": delivery.entry_id})
        letter = DeadLetter(message=refused_message, reason=refused.reason)
        await self._until_done(lambda: self._queue._store_dead_letter(letter))
        await self._until_done(lambda: _unless_lost(self._ack(delivery)))

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


def is_lost_key(exc: ResponseError) -> bool:
    """Whether Redis refused a command because the stream or its group is gone.

    NOGROUP answers a command on a missing stream or group; UNBLOCKED (Redis 7) ends a
    blocked XREADGROUP whose stream or group was deleted meanwhile (FLUSHALL, DEL).
    """
    text = str(exc)
    return "NOGROUP" in text or text.startswith("UNBLOCKED")  # NOGROUP: in a script's too.


async def _unless_lost(operation: Awaitable[Any]) -> None:
    """Settle a message; nothing to settle when its group went with it."""
    try:
        await operation
    except ResponseError as exc:
        if not is_lost_key(exc):
            raise


def _pairs(flat: list[str]) -> dict[str, str]:
    return dict(zip(flat[::2], flat[1::2], strict=True))
