"""Bounded retries with exponential backoff for model calls that may succeed if repeated.

Rate limits (429), overload (503, 529), a gateway's 502 and 504 and timeouts are retried as the
policy allows. Any other server error (500, 501, ...) is retried once: a local server that fails
a request (llama.cpp's 500 on a message it cannot template) fails the same request every time,
so a second failure becomes a `model_request_refused` error that says so. A connection that
fails before any byte of an answer (a pooled keep-alive connection the server had dropped) is
retried once, on a new connection. Anything else (a bad key, an unknown model, a context too
long) fails at once.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from agent_core.errors import LLMConnectionError, LLMError, LLMStatusError

__all__ = [
    "GATEWAY_STATUSES",
    "OVERLOADED_STATUSES",
    "RetryPolicy",
    "is_retryable",
    "with_retries",
]

OVERLOADED_STATUSES = frozenset({503, 529})
"""Server errors that say "busy, come back": retried as the policy allows, like a 429."""
GATEWAY_STATUSES = frozenset({502, 504})
"""A proxy's word that the server behind it did not answer (down, restarting, slow): retried
as the policy allows; the same request usually succeeds once that server is back."""

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


def _server_error(error: LLMError) -> bool:
    """A server error of the server itself, not "busy" nor a gateway's (500, 501, ...)."""
    status = error.status
    passing = OVERLOADED_STATUSES | GATEWAY_STATUSES
    return status is not None and status >= 500 and status not in passing


def _refused(error: LLMError) -> LLMStatusError:
    """The error for a request the server failed twice: it is the request, not a passing fault."""
    where = error.params.get("server") or "the model's server"
    detail = error.params.get("detail") or error.message
    return LLMStatusError(
        f"{where} refused this request: it failed twice with a server error "
        f"({error.status}): {detail}",
        hint="the server fails this request every time, so sending it again will not help: "
        "read the server's error above (and its log); try another model or server, or change "
        "the conversation (undo the step and steer it another way)",
        remedy="configure_model",
        code="model_request_refused",
        status=error.status,
        retryable=False,
        request_id=error.request_id,
        params={**error.params, "repeated": True},
    )


async def with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Await `call()`, retrying retryable `LLMError`s as `policy` allows.

    A server error other than overload, and a connection error, is retried at most once
    (see the module's docstring); a server error that repeats raises `model_request_refused`.
    """
    attempt = 0
    once: set[str] = set()
    while True:
        try:
            return await call()
        except LLMError as error:
            attempt += 1
            kind = _retried_once(error)
            if kind is not None and kind in once:
                if kind == "server":
                    raise _refused(error) from None
                raise
            if attempt > policy.max_retries or not (kind or is_retryable(error)):
                raise
            if kind is not None:
                once.add(kind)
            # A dead pooled connection is replaced at once; the server was never asked.
            await sleep(0 if kind == "connection" else policy.delay(attempt, error))


def _retried_once(error: LLMError) -> str | None:
    """The kind ("server", "connection") of an error retried at most once; None: the others."""
    if error.retryable is not None:
        return None  # The adapter decided (an exhausted quota, a timeout on a local server).
    if _server_error(error):
        return "server"
    if isinstance(error, LLMConnectionError) and not error.timed_out:
        return "connection"
    return None
