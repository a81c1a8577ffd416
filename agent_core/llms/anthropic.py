"""`AnthropicLLM`: Claude through Anthropic's Messages API (the `anthropic` SDK 2.x).

System messages become the top-level `system` prompt; tool calls and results become
`tool_use` / `tool_result` content blocks, and consecutive turns of one role are merged, since
the API wants user and assistant turns to alternate. The SDK client does no retrying of its
own (`max_retries=0`); what it shares with the other SDK adapters (a client per event loop,
retries, the stream relay) lives in `SDKChatModel`. Every SDK exception is translated into an
`LLMError` in one place, `_map_api_errors`, with a message that says what to do and never
holds the key.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import anthropic
from anthropic.types import (
    InputJSONDelta,
    Message,
    MessageParam,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStreamEvent,
    TextBlock,
    TextDelta,
    ToolParam,
    ToolUseBlock,
)

from agent_core.errors import (
    LLMConnectionError,
    LLMError,
    LLMStatusError,
    LLMTimeoutError,
    MissingKeyError,
)
from agent_core.llms._retry import GATEWAY_STATUSES, RetryPolicy
from agent_core.llms._sdk import SDKChatModel
from agent_core.llms._wire import (
    parse_tool_arguments,
    redact,
    remedy_for_status,
    retry_after,
    shorten,
)
from agent_core.llms.base import (
    RAW_TOOL_ARGUMENTS,
    ChatMessage,
    ChatResponse,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
    resolve_tool_choice,
)
from agent_core.llms.content import ImagePart, TextPart
from agent_core.llms.pricing import PriceTable
from agent_core.redaction import safe_url, scrub

__all__ = ["DEFAULT_ANTHROPIC_MODEL", "RAW_ARGUMENTS_KEY", "AnthropicLLM"]

_ANTHROPIC_HOST = "api.anthropic.com"

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-5"

RAW_ARGUMENTS_KEY = RAW_TOOL_ARGUMENTS
"""The `ToolCall.args` key holding tool input the model wrote that is not a JSON object."""

# A stream that fails after it started sends an `error` event on an HTTP 200 response; its
# error type tells what the status would have been.
_STATUS_OF_ERROR_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


class AnthropicLLM(SDKChatModel[anthropic.AsyncAnthropic, Message, RawMessageStreamEvent]):
    """A Claude model behind Anthropic's Messages API.

    Args:
        model: The model name, e.g. "claude-sonnet-5".
        api_key: The key; defaults to the `ANTHROPIC_API_KEY` environment variable.
        base_url: Another Anthropic-compatible endpoint (a proxy or gateway).
        client: A ready SDK client (tests pass one with a recorded transport); when given,
            `api_key`, `base_url` and `timeout` are not used. The client stays yours: it is
            never closed, and only its own retrying is turned off (ours decide).
        prices: Prices for the cost of each call; models missing from it have no cost.
        max_retries: Retries of rate-limited (429), overloaded (529), server-error (5xx) and
            timed-out calls.
        timeout: Seconds to wait for an answer.
        max_tokens: The most tokens one reply may have (the API requires a limit).
        temperature: Sent only when set. Anthropic's API version of SDK 2.x (2026-10-21)
            rejects sampling parameters, so set it only for a gateway that accepts it.
        retry_policy: Overrides `max_retries` with a full policy (delays, cap).

    Raises:
        UserError: No key, no `ANTHROPIC_API_KEY` and no `client`.
    """

    def __init__(
        self,
        model: str = DEFAULT_ANTHROPIC_MODEL,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        prices: PriceTable | None = None,
        max_retries: int = 3,
        timeout: float = 60.0,
        max_tokens: int = 4096,
        temperature: float | None = None,
        retry_policy: RetryPolicy | None = None,
    ) -> None:
        self.max_tokens = max_tokens
        self.temperature = temperature
        super().__init__(
            model,
            client=client,
            build_client=lambda: _make_client(api_key, base_url, timeout),
            prices=prices,
            retry_policy=retry_policy or RetryPolicy(max_retries=max_retries),
        )

    def _copy_client(self, client: anthropic.AsyncAnthropic) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=client.api_key,
            base_url=client.base_url,
            max_retries=client.max_retries,
            timeout=client.timeout,
        )

    def _request(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None,
        tool_choice: ToolChoice | None = None,
    ) -> dict[str, Any]:
        system, wire_messages = _wire_messages(messages)
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": wire_messages,
            "system": system or anthropic.omit,
            "tools": [_wire_tool(t) for t in tools or ()] or anthropic.omit,
            "tool_choice": _wire_tool_choice(tool_choice) if tools else anthropic.omit,
            "extra_body": self._extra_body(),
        }

    def _extra_body(self) -> dict[str, Any] | None:
        # SDK 2.x has no sampling parameters; a gateway that accepts one still gets it.
        return None if self.temperature is None else {"temperature": self.temperature}

    async def _create(self, client: anthropic.AsyncAnthropic, request: dict[str, Any]) -> Message:
        return await client.messages.create(**request)

    async def _open_stream(
        self, client: anthropic.AsyncAnthropic, request: dict[str, Any]
    ) -> anthropic.AsyncStream[RawMessageStreamEvent]:
        return await client.messages.create(**request, stream=True)

    def _streamed_reply(self) -> _StreamedReply:
        return _StreamedReply()

    def _stream_usage(
        self, reply: Any, messages: Sequence[ChatMessage], message: ChatMessage
    ) -> Usage:
        return self._usage(reply.prompt_tokens, reply.completion_tokens, reply.cached_tokens)

    def _response_of(self, completion: Message, messages: Sequence[ChatMessage]) -> ChatResponse:
        text = "".join(block.text for block in completion.content if isinstance(block, TextBlock))
        calls = tuple(
            ToolCall(id=block.id, name=block.name, args=dict(block.input))
            for block in completion.content
            if isinstance(block, ToolUseBlock)
        )
        message = ChatMessage(role="assistant", content=text, tool_calls=calls)
        usage = self._usage(
            completion.usage.input_tokens,
            completion.usage.output_tokens,
            completion.usage.cache_read_input_tokens,
        )
        return ChatResponse(
            message=message,
            usage=usage,
            model=completion.model or self.model,
            finish_reason=completion.stop_reason,
        )

    def _usage(
        self, prompt_tokens: int, completion_tokens: int, cached: int | None = None
    ) -> Usage:
        usage = Usage(
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cached_tokens=cached
        )
        return self.prices.with_cost(self.model, usage)

    def _map_errors(self, client: anthropic.AsyncAnthropic) -> AbstractContextManager[None]:
        return _map_api_errors(model=self.model, base_url=self.base_url, secret=client.api_key)


# --- the client -----------------------------------------------------------------------------


def _make_client(
    api_key: str | None, base_url: str | None, timeout: float
) -> anthropic.AsyncAnthropic:
    key = api_key or os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise MissingKeyError(
            "AnthropicLLM has no API key",
            hint="set the ANTHROPIC_API_KEY environment variable or pass api_key=...",
            params={"provider": "anthropic", "key_env": "ANTHROPIC_API_KEY"},
        )
    return anthropic.AsyncAnthropic(api_key=key, base_url=base_url, max_retries=0, timeout=timeout)


# --- messages and tools on the wire ---------------------------------------------------------


def _wire_messages(messages: Sequence[ChatMessage]) -> tuple[str, list[MessageParam]]:
    """The top-level system prompt, and the turns with one role merged into one turn."""
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for message in messages:
        if message.role == "system":
            continue
        role, blocks = _blocks_of(message)
        if not blocks:  # The API rejects empty content; an empty message says nothing anyway.
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    return system, [_wire_turn(role, blocks) for role, blocks in turns]


def _blocks_of(message: ChatMessage) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        result = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": message.content,
        }
        return "user", [result]
    blocks: list[dict[str, Any]] = []
    if message.images:
        # The API rejects an empty text block.
        blocks.extend(_wire_part(part) for part in message.parts if str(part))
    elif message.content:
        blocks.append({"type": "text", "text": message.content})
    if message.role == "assistant":
        blocks.extend(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.args}
            for call in message.tool_calls
        )
    return message.role, blocks


def _wire_part(part: TextPart | ImagePart) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        source = {"type": "base64", "media_type": part.mime_type, "data": part.data}
        return {"type": "image", "source": source}
    return {"type": "text", "text": part.text}


def _wire_turn(role: str, blocks: list[dict[str, Any]]) -> MessageParam:
    content: str | list[dict[str, Any]]
    if len(blocks) == 1 and blocks[0]["type"] == "text":
        content = blocks[0]["text"]
    else:
        # The API wants a user turn's tool results before any text in it.
        content = sorted(blocks, key=lambda block: block["type"] != "tool_result")
    # Plain JSON in the wire shape; the SDK's TypedDicts add nothing the tests do not check.
    return cast(MessageParam, {"role": role, "content": content})


def _wire_tool_choice(choice: ToolChoice | None) -> Any:
    """Anthropic's form of `choice`; `{"type": "auto"}` when none was made (its default)."""
    mode, name = resolve_tool_choice(choice or "auto")
    if name is not None:
        return {"type": "tool", "name": name}
    return {"type": {"required": "any"}.get(mode, mode)}


def _wire_tool(spec: ToolSpec) -> ToolParam:
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


# --- streaming ------------------------------------------------------------------------------


@dataclass
class _PartialToolUse:
    id: str
    name: str
    start_input: dict[str, Any]
    json_parts: list[str] = field(default_factory=list)

    def to_call(self) -> ToolCall:
        # Input arrives as JSON fragments; a block without fragments carries it whole.
        streamed = "".join(self.json_parts)
        args = parse_tool_arguments(streamed) if self.json_parts else self.start_input
        return ToolCall(id=self.id, name=self.name, args=args)


class _StreamedReply:
    """Accumulates a streamed reply: text, tool_use blocks by index, usage and model name."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._open: dict[int, _PartialToolUse] = {}
        self._calls: list[ToolCall] = []
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_tokens: int | None = None
        self.model: str | None = None
        self.finish_reason: str | None = None

    @property
    def text(self) -> str:
        """The text streamed so far."""
        return "".join(self._text)

    def add(self, event: RawMessageStreamEvent) -> str:
        """Take in one event; return its text delta."""
        if isinstance(event, RawMessageStartEvent):
            self.model = event.message.model
            self.prompt_tokens = event.message.usage.input_tokens
            self.completion_tokens = event.message.usage.output_tokens
            self.cached_tokens = event.message.usage.cache_read_input_tokens
        elif isinstance(event, RawContentBlockStartEvent):
            return self._start(event)
        elif isinstance(event, RawContentBlockDeltaEvent):
            return self._delta(event)
        elif isinstance(event, RawContentBlockStopEvent) and event.index in self._open:
            self._calls.append(self._open.pop(event.index).to_call())
        elif isinstance(event, RawMessageDeltaEvent):
            # Counts in `message_delta` are cumulative: they replace, not add.
            self.completion_tokens = event.usage.output_tokens
            self.finish_reason = event.delta.stop_reason or self.finish_reason
            if event.usage.input_tokens is not None:
                self.prompt_tokens = event.usage.input_tokens
        return ""

    def _start(self, event: RawContentBlockStartEvent) -> str:
        block = event.content_block
        if isinstance(block, ToolUseBlock):
            self._open[event.index] = _PartialToolUse(block.id, block.name, dict(block.input))
        elif isinstance(block, TextBlock) and block.text:
            self._text.append(block.text)
            return block.text
        return ""

    def _delta(self, event: RawContentBlockDeltaEvent) -> str:
        delta = event.delta
        if isinstance(delta, TextDelta):
            self._text.append(delta.text)
            return delta.text
        if isinstance(delta, InputJSONDelta) and event.index in self._open:
            self._open[event.index].json_parts.append(delta.partial_json)
        return ""

    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The complete tool calls in the order they ended, then any the stream left open."""
        unfinished = [self._open[index].to_call() for index in sorted(self._open)]
        return (*self._calls, *unfinished)


# --- errors ---------------------------------------------------------------------------------


def _label(base_url: str | None) -> str:
    """Who answered: Anthropic, or the Anthropic-compatible server `base_url` names."""
    if not base_url or _ANTHROPIC_HOST in base_url:
        return "Anthropic"
    return f"the server at {safe_url(base_url)}"


@contextmanager
def _map_api_errors(*, model: str, base_url: str, secret: str | None) -> Iterator[None]:
    """Translate every SDK exception raised inside into an `LLMError` a person can act on."""
    try:
        yield
    except anthropic.APIStatusError as err:
        raise _status_error(err, model=model, where=_label(base_url), secret=secret) from None
    except anthropic.APITimeoutError:
        raise LLMTimeoutError(
            f"{_label(base_url)} did not answer in time (model {model!r})",
            hint="run the step again, or build AnthropicLLM with a larger timeout= (or a lower "
            "max_tokens=) for long replies",
        ) from None
    except anthropic.APIConnectionError as err:
        cause = redact(str(err.__cause__ or err), secret)
        raise LLMConnectionError(
            f"could not connect to {_label(base_url)} at {safe_url(base_url)} ({scrub(cause)})",
            hint="check your network connection and the base URL, then run the step again",
        ) from None
    except anthropic.AnthropicError as err:
        detail = redact(shorten(str(err)), secret)
        raise LLMError(
            f"the call to {_label(base_url)} failed (model {model!r}): {detail}",
            hint="run the step again",
            remedy="retry",
        ) from None


def _status_error(
    err: anthropic.APIStatusError, *, model: str, where: str, secret: str | None
) -> LLMError:
    status = err.status_code
    if status < 400:
        status = _STATUS_OF_ERROR_TYPE.get(str(err.type), 500)
    wait = retry_after(status, err.response.headers)
    detail = redact(shorten(err.api_message or err.message), secret)
    message, _, hint = _status_message(status, detail=detail, model=model, where=where).rpartition(
        "; "
    )
    if wait is not None:
        message += f" ({where} asked to wait {wait:g}s)"
    return LLMStatusError(
        message,
        hint=hint,
        remedy=remedy_for_status(status),
        status=status,
        retry_after=wait,
        request_id=err.response.headers.get("request-id"),
        params={"server": where, "detail": detail},
    )


def _status_message(status: int, *, detail: str, model: str, where: str) -> str:
    if status == 401:
        return f"{where} rejected the API key (401: {detail}); set a valid key (ANTHROPIC_API_KEY)"
    if status == 403:
        return (
            f"{where} refused access to model {model!r} (403: {detail}); check that your "
            "key's workspace may use this model, or pick another model"
        )
    if status == 404:
        return (
            f"{where} has no model {model!r} (404: {detail}); check the model name (e.g. "
            f"claude-sonnet-5), or the base URL if you set one"
        )
    if status == 429:
        return (
            f"{where} rate-limited the call to {model!r} (429: {detail}); wait a moment and "
            "run the step again, or run fewer steps at once"
        )
    if status == 529:
        return (
            f"{where} is overloaded (529: {detail}); this is temporary, run the step again "
            "in a moment"
        )
    if status in (400, 413):
        return _invalid_request_message(status, detail=detail, model=model, where=where)
    if status == 503:
        return (
            f"{where} is unavailable (503: {detail}); this is usually temporary, run the step "
            "again in a moment"
        )
    if status in GATEWAY_STATUSES:
        return (
            f"a gateway in front of {where} got no answer from the server behind it ({status}: "
            f"{detail}); that server may be down or restarting: run the step again once it is "
            "back"
        )
    if status >= 500:
        return (
            f"{where} had a server error ({status}: {detail}); run the step again once: a "
            f"server error that repeats means {where} cannot handle this request"
        )
    return f"{where} refused the request ({status}: {detail}); fix it and run the step again"


def _invalid_request_message(status: int, *, detail: str, model: str, where: str) -> str:
    lowered = detail.lower()
    too_long = "prompt is too long" in lowered or ("exceed" in lowered and "context" in lowered)
    if status == 413 or too_long:
        return (
            f"the conversation is too long for {model!r}'s context window ({status}: {detail}); "
            "run fewer steps in this task (undo some, or start a new task), or lower the memory "
            "token limit so less history is sent"
        )
    hint = ""
    if "temperature" in lowered:
        hint = " (this API version takes no temperature: build AnthropicLLM without one)"
    return (
        f"{where} rejected the request as invalid (400: {detail}){hint}; edit the step's "
        "input or the model settings and run the step again"
    )
