"""Bounded retries with exponential backoff for model calls that may succeed if repeated.

Rate limits (429), server errors (5xx) and timeouts are retried; anything else (a bad key, an
unknown model, a context too long) fails at once, since repeating cannot help.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from agent_core.errors import LLMError

__all__ = ["RetryPolicy", "is_retryable", "with_retries"]

T = TypeVar("T")


def is_retryable(error: LLMError) -> bool:
    """Whether repeating the call may succeed."""
    if error.retryable is not None:
        return error.retryable
    if error.status is None:
        return error.timed_out
    return error.status == 429 or error.status >= 500


class RetryPolicy:
    """How often and how long to wait between tries.

    Args:
        max_retries: Retries after the first try (0 disables retrying).
        base_delay: Seconds before the first retry; doubles each time, with jitter.
        max_delay: The longest wait between tries, also the cap on a server's retry-after.
    """

    def __init__(
        self, *, max_retries: int = 3, base_delay: float = 0.5, max_delay: float = 20.0
    ) -> None:
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay

    def delay(self, attempt: int, error: LLMError) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        if error.retry_after is not None:
            return min(error.retry_after, self.max_delay)
        backoff = self.base_delay * 2 ** (attempt - 1)
        return min(backoff * (0.5 + random.random() / 2), self.max_delay)


async def with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Await `call()`, retrying retryable `LLMError`s as `policy` allows."""
    attempt = 0
    while True:
        try:
            return await call()
        except LLMError as error:
            attempt += 1
            if attempt > policy.max_retries or not is_retryable(error):
                raise
            await sleep(policy.delay(attempt, error))
