"""Wire-level helpers shared by the provider adapters (`OpenAILLM`, `AnthropicLLM`).

What is the same whatever the provider: reading a server's retry-after headers, keeping the key
and overlong bodies out of error text, turning tool-argument JSON into a dict, and relaying a
stream of SDK events as `ChatStreamEvent`s. Anything that names an SDK type stays in its adapter.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from agent_core.errors import LLMConnectionError, Remedy
from agent_core.llms._retry import RetryPolicy, with_retries
from agent_core.llms.base import (
    RAW_TOOL_ARGUMENTS,
    ChatMessage,
    ChatResponse,
    ChatStreamEvent,
    ToolCall,
    Usage,
)

__all__ = [
    "EventStream",
    "StreamedReply",
    "parse_tool_arguments",
    "redact",
    "relay_stream",
    "remedy_for_status",
    "retry_after",
    "shorten",
]

EventT = TypeVar("EventT")
EventT_co = TypeVar("EventT_co", covariant=True)
EventT_contra = TypeVar("EventT_contra", contravariant=True)

_MAX_DETAIL_CHARS = 1200
_DETAIL_HEAD_CHARS = 300
"""A longer detail keeps its start and its end: a server's own error text often ends with what
went wrong (an exception's class and message after a preamble)."""


def retry_after(status: int, headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked to wait, read only for statuses worth retrying (429, 5xx).

    `retry-after-ms` wins over `retry-after`, which may hold seconds or an HTTP date.
    """
    if status != 429 and status < 500:
        return None
    try:
        milliseconds = headers.get("retry-after-ms")
        if milliseconds:
            return max(0.0, float(milliseconds) / 1000)
    except ValueError:
        pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def remedy_for_status(status: int) -> Remedy:
    """How a person fixes a call the provider refused with `status`."""
    if status in (401, 403, 404):
        return "configure_model"  # the key, the model name or the address
    if status in (408, 409, 429) or status >= 500:
        return "retry"
    return "edit_step"


def redact(text: str, secret: str | None) -> str:
    """`text` with every occurrence of the API key `secret` replaced by "[redacted]"."""
    # Belt and braces: a compatible server or gateway could echo the key back in its error text.
    # A secret this short would blank out ordinary words, and is no real key anyway.
    if secret and len(secret) >= 4:
        return text.replace(secret, "[redacted]")
    return text


def shorten(text: str) -> str:
    """`text` on one line; past a length that reads well in a message, its start and its end."""
    text = " ".join(text.split())
    if len(text) <= _MAX_DETAIL_CHARS:
        return text
    tail = _MAX_DETAIL_CHARS - _DETAIL_HEAD_CHARS
    return f"{text[:_DETAIL_HEAD_CHARS]} [...] {text[-tail:]}"


def _broken_stream(where: str, cause: str) -> LLMConnectionError:
    return LLMConnectionError(
        f"{where} opened a reply stream and closed it before sending anything"
        + (f" ({cause})" if cause else ""),
        hint="the server probably failed while starting to generate: read its log, then run "
        "the step again; if it fails the same way, try a smaller request or another model",
        remedy="retry",
        code="model_stream_broken",
        params={"server": where},
    )


def _cut_stream(where: str, chars: int) -> LLMConnectionError:
    return LLMConnectionError(
        f"{where} ended the reply stream mid-reply, without a finish reason, after "
        f"{chars:,} characters: the reply is cut off, so it was not kept as an answer",
        hint="the server (or a proxy in front of it) lost the reply while sending it: read its "
        "log, then run the step again",
        remedy="retry",
        retryable=True,
        code="model_stream_cut",
        params={"server": where, "chars": chars},
    )


def parse_tool_arguments(text: str) -> dict[str, Any]:
    """Tool arguments as a dict; text that is not a JSON object is kept raw for the tool to refuse.

    The raw text goes under `RAW_TOOL_ARGUMENTS`, so the model can be shown its own mistake.
    """
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {RAW_TOOL_ARGUMENTS: text}
    return value if isinstance(value, dict) else {RAW_TOOL_ARGUMENTS: text}


class EventStream(Protocol[EventT_co]):
    """An SDK's open stream of events (`openai.AsyncStream`, `anthropic.AsyncStream`)."""

    def __aiter__(self) -> AsyncIterator[EventT_co]:
        """Iterate over the events as they arrive."""
        ...

    async def close(self) -> None:
        """Close the response and free its connection."""
        ...


class StreamedReply(Protocol[EventT_contra]):
    """An adapter's accumulator of one streamed reply."""

    @property
    def text(self) -> str:
        """The text streamed so far."""
        ...

    @property
    def model(self) -> str | None:
        """The model the server says answered, once it has said so."""
        ...

    def add(self, event: EventT_contra, /) -> str:
        """Take in one event; return its text delta ("" when it has none)."""
        ...

    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls the reply holds."""
        ...

    @property
    def finish_reason(self) -> str | None:
        """Why the model stopped, once the stream has said so."""
        ...


async def relay_stream(
    open_stream: Callable[[], Awaitable[EventStream[EventT]]],
    reply: StreamedReply[EventT],
    *,
    policy: RetryPolicy,
    errors: Callable[[], AbstractContextManager[None]],
    usage_of: Callable[[ChatMessage], Usage],
    default_model: str,
    where: str = "the model's server",
) -> AsyncGenerator[ChatStreamEvent, None]:
    """Yield a stream's text deltas, then one event with the whole `ChatResponse`.

    Only opening the stream is retried (by `policy`): once text has been shown, repeating the
    call would show a different reply. Errors while reading are translated inside `errors()`.

    Args:
        open_stream: Opens the SDK stream; called again on each retry.
        reply: Accumulates the events into text, tool calls and the model name.
        policy: How often to retry opening the stream.
        errors: The adapter's context manager mapping SDK exceptions to `LLMError`.
        usage_of: The usage of the finished reply message.
        default_model: The model name to report when the stream named none.
        where: The server, as error messages name it.

    Raises:
        LLMConnectionError: `model_stream_broken`: the stream opened, then ended or failed
            before its first event. That is no reply (not an empty one): the step fails.
            `model_stream_cut`: the stream ended cleanly with no finish reason: a reply cut
            off mid-way, which would otherwise be kept as a whole answer.
    """
    stream = await with_retries(open_stream, policy)
    received = False
    try:
        with errors():
            async for event in stream:
                received = True
                delta = reply.add(event)
                if delta:
                    yield ChatStreamEvent(delta=delta)
    except LLMConnectionError as error:
        if received:
            raise
        raise _broken_stream(where, error.message) from None
    finally:
        await stream.close()  # Also when the consumer stops early: frees the connection.
    if not received:
        raise _broken_stream(where, "")
    if reply.finish_reason is None:
        raise _cut_stream(where, len(reply.text))
    message = ChatMessage(role="assistant", content=reply.text, tool_calls=reply.tool_calls())
    response = ChatResponse(
        message=message,
        usage=usage_of(message),
        model=reply.model or default_model,
        finish_reason=reply.finish_reason,
    )
    yield ChatStreamEvent(response=response)
