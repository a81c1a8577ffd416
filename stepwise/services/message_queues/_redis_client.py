"""What the Redis Streams queue and its consuming loops share: settings, clients, backoff.

Clients are bound to the event loop that created them, and the app runs each rerun on a new
thread with its own loop, so a client is never cached beyond its loop.
"""

from __future__ import annotations

import asyncio
import random
import threading
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from stepwise.services.errors import QueueUnavailableError

__all__ = [
    "LOST_MARK",
    "RETRYABLE_ERRORS",
    "Backoff",
    "LoopClients",
    "MessageQueueUnavailableError",
    "RedisStreamsSettings",
    "honour_swallowed_cancel",
    "new_client",
    "redact_url",
    "retry_until",
]

T = TypeVar("T")

# A dropped connection, a refused one while redis-server restarts, or LOADING while it
# replays its append-only file: all pass once the server is back.
RETRYABLE_ERRORS: tuple[type[BaseException], ...] = (
    RedisConnectionError,
    RedisTimeoutError,
    ConnectionError,
    TimeoutError,
)

LOST_MARK = "lost "
"""How the epoch key starts once a consumer found its stream or group gone."""


class MessageQueueUnavailableError(QueueUnavailableError):
    """The message broker could not be reached for longer than the queue waits."""


@dataclass(frozen=True)
class RedisStreamsSettings:
    """How a `RedisStreamsMessageQueue` talks to Redis (see its docstring for each field)."""

    url: str
    stream_prefix: str
    maxlen: int
    visibility_timeout: float
    claim_interval: float
    block_ms: int
    publish_timeout: float
    max_backoff: float
    signing_key: bytes | None = field(default=None, repr=False)

    def stream(self, message_type: str) -> str:
        """The stream that holds the messages of `message_type`."""
        return f"{self.stream_prefix}{message_type}"

    @property
    def epoch_key(self) -> str:
        """The key whose absence says Redis lost messages (see `lost_messages`)."""
        return f"{self.stream_prefix}epoch"

    def dead_stream(self, message_type: str) -> str:
        """The stream that holds the dead letters of `message_type`."""
        return f"{self.stream_prefix}dead:{message_type}"


def new_client(settings: RedisStreamsSettings) -> aioredis.Redis:
    """A client for the running loop; retries are ours, so redis-py's own are off."""
    # A blocked XREADGROUP must not hit the socket timeout before the server answers.
    socket_timeout = settings.block_ms / 1000 + 5.0
    return aioredis.Redis.from_url(
        settings.url,
        decode_responses=True,
        retry=Retry(NoBackoff(), 0),
        socket_timeout=socket_timeout,
        # Bounded by the publish timeout, so a refused or silent host fails a publish fast.
        socket_connect_timeout=min(5.0, settings.publish_timeout),
    )


class LoopClients:
    """One client per event loop, made on first use; a closed loop's client is dropped."""

    def __init__(self, settings: RedisStreamsSettings):
        self._settings = settings
        self._lock = threading.Lock()
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis]
        self._clients = weakref.WeakKeyDictionary()

    def get(self) -> aioredis.Redis:
        """The running loop's client."""
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.get(loop)
            if client is None:
                client = self._clients[loop] = new_client(self._settings)
            return client

    async def close_current(self) -> None:
        """Close the running loop's client (others belong to loops this one cannot drive)."""
        with self._lock:
            client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()


class Backoff:
    """Exponential backoff with jitter, so replicas do not reconnect in lockstep."""

    def __init__(self, *, first: float = 0.05, cap: float = 2.0):
        self._first = first
        self._cap = cap
        self._attempt = 0

    def next_delay(self) -> float:
        """The delay before the next attempt (grows until the cap)."""
        delay = min(self._cap, self._first * 2**self._attempt)
        self._attempt += 1
        return delay * random.uniform(0.5, 1.0)

    def reset(self) -> None:
        """Start from the first delay again (the connection works)."""
        self._attempt = 0


def redact_url(url: str) -> str:
    """`url` without its password, fit for an error message."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


async def retry_until(
    operation: Callable[[], Awaitable[T]],
    *,
    settings: RedisStreamsSettings,
    what: str,
) -> T:
    """Run `operation`, retrying while Redis is unreachable, for `publish_timeout` at most.

    Raises:
        MessageQueueUnavailableError: Redis stayed unreachable for the whole timeout.
    """
    timeout = settings.publish_timeout
    deadline = asyncio.get_running_loop().time() + timeout
    backoff = Backoff(cap=settings.max_backoff)
    while True:
        try:
            result = await operation()
        except RETRYABLE_ERRORS as exc:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise _unavailable(settings, what, timeout, exc) from exc
            await asyncio.sleep(min(remaining, backoff.next_delay()))
        else:
            honour_swallowed_cancel()
            return result


def honour_swallowed_cancel() -> None:
    """Raise CancelledError if this task was cancelled but the cancellation got lost.

    redis-py sends each command under `asyncio.wait_for`, which on Python 3.11 returns the
    result and drops a cancellation that arrives as the send completes; a consuming loop
    would then run on forever. The request still shows in `Task.cancelling()`.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def _unavailable(
    settings: RedisStreamsSettings, what: str, timeout: float, exc: BaseException
) -> MessageQueueUnavailableError:
    detail = str(exc) or type(exc).__name__
    return MessageQueueUnavailableError(
        f"could not {what}: Redis at {redact_url(settings.url)} stayed unreachable for "
        f"{timeout:g} s ({detail})",
        hint="start redis-server or fix the queue URL, then publish again; "
        "raise publish_timeout to wait longer",
    )
