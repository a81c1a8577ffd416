"""`RedisStreamsMessageQueue`: the broker for services in several processes and machines.

Where llama-agents' Redis queue used pub/sub (every subscriber got every message, and one
sent while nobody listened was lost), this one uses Redis Streams: one stream per message
type, one consumer group per type whose members compete for its messages, acknowledgement
only after a message is handled, re-claim of a dead consumer's messages after a visibility
timeout, a dead-letter stream per type, and streams bounded by approximate trimming.
"""

from __future__ import annotations

import time

from redis.exceptions import ResponseError

from stepwise.services.message_queues._redis_client import (
    LOST_MARK,
    LoopClients,
    MessageQueueUnavailableError,
    RedisStreamsSettings,
    redact_url,
    retry_until,
)
from stepwise.services.message_queues._redis_consumer import StreamConsumer, ensure_group
from stepwise.services.message_queues.base import (
    BaseMessageQueue,
    BaseMessageQueueConsumer,
    DeadLetter,
    StartConsumingCallable,
)
from stepwise.services.message_queues.signing import signed_fields, signing_key
from stepwise.services.messages import CONTROL_PLANE, QueueMessage, hop_id_of

__all__ = ["MessageQueueUnavailableError", "RedisStreamsMessageQueue"]


class RedisStreamsMessageQueue(BaseMessageQueue):
    """A message queue on Redis Streams: at-least-once delivery to competing consumers.

    Usable from any event loop and thread: clients are made per loop on first use, and each
    consuming loop owns its client. Await `close()` before a loop ends to release its client
    (one left behind is dropped with its loop, its socket closed when collected). A consumer
    whose connection drops reconnects with backoff and carries on; publishing while Redis is
    down retries for `publish_timeout` seconds, then raises `MessageQueueUnavailableError`.

    Args:
        url: The Redis server, e.g. `redis://127.0.0.1:6379/0` (`rediss://` for TLS).
        max_deliveries: Deliveries before a failing message goes to the dead letters.
        notify_dead_letters_to: The message type told about each dead letter.
        visibility_timeout: Seconds a message may stay unacknowledged without its consumer
            renewing the lease (it does so while its handler runs) before another consumer
            takes it over: how long a killed consumer's message waits.
        claim_interval: Seconds between a consumer's scans for such messages (default: half
            the visibility timeout).
        maxlen: Approximate bound on each stream's length (`XADD ... MAXLEN ~`). Trimming
            drops the oldest entries even if unhandled, so keep it well above the backlog.
        stream_prefix: Prefix of every key the queue writes (`<prefix><type>`,
            `<prefix>dead:<type>`), so several systems can share one Redis database.
        block_ms: Longest wait of one read for new messages (milliseconds); it bounds how
            long a deregistered consumer takes to stop.
        publish_timeout: Seconds a publish waits for an unreachable Redis before raising.
        max_backoff: Longest pause between reconnection attempts (seconds).
        signing_token: The services' shared secret (`STEPWISE_API_TOKEN` in `stepwise services
            up`): messages are signed with a key derived from it, and a message without a
            valid signature is never handled, nor one signed for another stream (see
            `signing`). Every part of a system must have the same one. None: messages are
            neither signed nor checked.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        max_deliveries: int = 5,
        notify_dead_letters_to: str = CONTROL_PLANE,
        visibility_timeout: float = 30.0,
        claim_interval: float | None = None,
        maxlen: int = 100_000,
        stream_prefix: str = "stepwise:",
        block_ms: int = 2_000,
        publish_timeout: float = 10.0,
        max_backoff: float = 2.0,
        signing_token: str | None = None,
    ):
        super().__init__(
            max_deliveries=max_deliveries, notify_dead_letters_to=notify_dead_letters_to
        )
        _check_positive(
            visibility_timeout=visibility_timeout,
            maxlen=maxlen,
            block_ms=block_ms,
            publish_timeout=publish_timeout,
            max_backoff=max_backoff,
        )
        if claim_interval is not None:
            _check_positive(claim_interval=claim_interval)
        self.settings = RedisStreamsSettings(
            url=url,
            stream_prefix=stream_prefix,
            maxlen=maxlen,
            visibility_timeout=visibility_timeout,
            claim_interval=visibility_timeout / 2 if claim_interval is None else claim_interval,
            block_ms=block_ms,
            publish_timeout=publish_timeout,
            max_backoff=max_backoff,
            signing_key=signing_key(signing_token) if signing_token else None,
        )
        self._clients = LoopClients(self.settings)
        self._loops: dict[str, set[StreamConsumer]] = {}

    def __repr__(self) -> str:
        url = redact_url(self.settings.url)
        return f"RedisStreamsMessageQueue({url!r}, stream_prefix={self.settings.stream_prefix!r})"

    async def _publish(self, message: QueueMessage) -> None:
        stream = self.settings.stream(message.type)
        fields = signed_fields(
            self.settings.signing_key,
            stream=stream,
            addressee=message.type,
            hop_id=hop_id_of(message),
            payload=message.model_dump_json(),
        )
        await self._xadd(stream, fields, f"publish to {stream}")

    async def register_consumer(self, consumer: BaseMessageQueueConsumer) -> StartConsumingCallable:
        """Register `consumer` in its type's group; await the returned callable to consume.

        Each awaiting of the callable is one member of the group with its own name, so
        several replicas (in this process or others) share the type's messages.
        """
        stream = self.settings.stream(consumer.message_type)
        await retry_until(
            lambda: ensure_group(self._clients.get(), stream, consumer.message_type),
            settings=self.settings,
            what=f"create the consumer group of {stream}",
        )
        loops = self._loops.setdefault(consumer.id_, set())

        async def start_consuming() -> None:
            loop = StreamConsumer(self, consumer, self.settings)
            loops.add(loop)
            try:
                await loop.run()
            finally:
                loops.discard(loop)

        return start_consuming

    async def deregister_consumer(self, consumer: BaseMessageQueueConsumer) -> None:
        """Stop `consumer`'s loops after their current message (within `block_ms`).

        A message still unacknowledged in its name is taken over by the other consumers.
        """
        for loop in self._loops.pop(consumer.id_, set()):
            loop.stopping = True

    async def dead_letters(self, message_type: str) -> list[DeadLetter]:
        """The dead letters of `message_type`, oldest first."""
        stream = self.settings.dead_stream(message_type)
        entries = await retry_until(
            lambda: self._clients.get().xrange(stream),
            settings=self.settings,
            what=f"read {stream}",
        )
        return [DeadLetter.model_validate_json(fields["dead_letter"]) for _, fields in entries]

    async def has_live_consumer(self, message_type: str) -> bool:
        """Whether a member of the type's group touched Redis within the visibility timeout.

        A consumer reads every `block_ms` and renews the lease of the message it handles every
        third of the visibility timeout, so one that has been silent for longer is dead (a
        killed process stays listed in the group).
        """
        stream = self.settings.stream(message_type)
        try:
            consumers = await retry_until(
                lambda: self._clients.get().xinfo_consumers(stream, message_type),
                settings=self.settings,
                what=f"list the consumers of {stream}",
            )
        except ResponseError:  # No such stream or group: nobody ever consumed it.
            return False
        fresh_ms = 1000 * max(self.settings.visibility_timeout, 2 * self.settings.block_ms / 1000)
        return any(int(consumer["idle"]) < fresh_ms for consumer in consumers)

    async def lost_messages(self) -> bool:
        """Whether Redis lost messages since the last call (its epoch key was gone or marked).

        Each call writes the key and reads what it held, in one command, so a Redis that
        restarted empty (or was flushed, or evicted the key) says so once, to one control
        plane of several; so does a Redis this queue never used, which is right for a control
        plane whose SQLite file remembers hops Redis does not know. A consumer that finds its
        stream or group gone marks the key lost (see `StreamConsumer`), so the loss of one
        stream is told the same way, in whatever process it was noticed.
        """
        key = self.settings.epoch_key
        before = await retry_until(
            lambda: self._clients.get().set(key, str(time.time()), get=True),
            settings=self.settings,
            what=f"read {key}",
        )
        return before is None or str(before).startswith(LOST_MARK)

    async def close(self) -> None:
        """Close this event loop's client (consuming loops close their own when they end)."""
        await self._clients.close_current()

    async def _store_dead_letter(self, letter: DeadLetter) -> None:
        stream = self.settings.dead_stream(letter.message.type)
        await self._xadd(stream, {"dead_letter": letter.model_dump_json()}, f"write to {stream}")

    async def _xadd(self, stream: str, fields: dict[str, str], what: str) -> None:
        # A retry after a lost reply may add the entry twice: handlers are idempotent by id_.
        await retry_until(
            lambda: self._clients.get().xadd(
                stream, fields, maxlen=self.settings.maxlen, approximate=True
            ),
            settings=self.settings,
            what=what,
        )


def _check_positive(**values: float) -> None:
    for name, value in values.items():
        if value <= 0:
            raise ValueError(f"{name} must be positive, not {value!r}")
