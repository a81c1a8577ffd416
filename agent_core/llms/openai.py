"""`OpenAILLM`: OpenAI's chat completions API, and any server that speaks it.

The same adapter drives local OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio)
through `base_url`. What it shares with the other SDK adapters (a client per event loop,
retries, the stream relay) lives in `SDKChatModel`; the client it builds does no retrying of
its own (`max_retries=0`). Every SDK exception is translated into an `LLMError` in one place,
`_map_api_errors`, with a message that says what to do and never holds the key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionContentPartParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)
from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall
from openai.types.completion_usage import CompletionUsage

from agent_core._tokens import estimate_tokens
from agent_core.errors import (
    LLMConnectionError,
    LLMError,
    LLMStatusError,
    LLMTimeoutError,
    MissingKeyError,
)
from agent_core.llms._retry import GATEWAY_STATUSES, OVERLOADED_STATUSES, RetryPolicy
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
from agent_core.llms.catalog import (
    OPENAI_COMPATIBLE_PRESETS,  # its old home: still importable
    busy_after_timeout,
    reply_cap_field,
)
from agent_core.llms.content import ImagePart
from agent_core.llms.pricing import PriceTable
from agent_core.redaction import safe_url, scrub

__all__ = ["OPENAI_COMPATIBLE_PRESETS", "RAW_ARGUMENTS_KEY", "OpenAILLM"]

RAW_ARGUMENTS_KEY = RAW_TOOL_ARGUMENTS
"""The `ToolCall.args` key holding tool arguments the model wrote that are not a JSON object."""

_OPENAI_HOST = "api.openai.com"
# Local servers ignore the key, but the SDK refuses to build a client without one.
_PLACEHOLDER_KEY = "not-needed"


class OpenAILLM(SDKChatModel[openai.AsyncOpenAI, ChatCompletion, ChatCompletionChunk]):
    """A chat model behind the OpenAI chat completions API.

    Args:
        model: The model name, e.g. "gpt-4o-mini", or a local server's model ("llama3.2").
        api_key: The key. Given, it is sent to whichever server this talks to (a local
            server that wants a key gets it). When None it comes from `OPENAI_API_KEY`, but
            only when no `base_url` is given: the environment's key never goes to another host.
        base_url: An OpenAI-compatible server's URL, or a name in `OPENAI_COMPATIBLE_PRESETS`
            ("ollama"); defaults to `OPENAI_BASE_URL`, then OpenAI. No key is needed with it.
        client: A ready SDK client (tests pass one with a recorded transport); when given,
            `api_key`, `base_url` and `timeout` are not used. The client stays yours: it is
            never closed, and only its own retrying is turned off (ours decide).
        prices: Prices for the cost of each call; models missing from it have no cost.
        max_retries: Retries of rate-limited (429), server-error (5xx) and timed-out calls.
        timeout: Seconds to wait for an answer.
        temperature: Sampling temperature; the server's default when None.
        max_tokens: The most tokens one reply may have; None sends no cap. Sent as
            `max_completion_tokens` to OpenAI's API, `max_tokens` to other servers
            (`catalog.reply_cap_field`).
        retry_policy: Overrides `max_retries` with a full policy (delays, cap).

    Raises:
        UserError: No key, no `OPENAI_API_KEY`, no `base_url` and no `client`.
    """

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        client: openai.AsyncOpenAI | None = None,
        prices: PriceTable | None = None,
        max_retries: int = 3,
        timeout: float = 60.0,
        temperature: float | None = None,
        max_tokens: int | None = None,
        retry_policy: RetryPolicy | None = None,
    ) -> None:
        self.temperature = temperature
        self.max_tokens = max_tokens
        if api_key is None and base_url is None:
            api_key = os.environ.get("OPENAI_API_KEY")
        url = _resolve_base_url(base_url)
        super().__init__(
            model,
            client=client,
            build_client=lambda: _make_client(api_key, url, timeout),
            prices=prices,
            retry_policy=retry_policy or RetryPolicy(max_retries=max_retries),
        )
        self.max_tokens_field = reply_cap_field("openai", self.base_url)

    def _copy_client(self, client: openai.AsyncOpenAI) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
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
        return {
            "model": self.model,
            "messages": [_wire_message(m) for m in messages],
            "tools": [_wire_tool(t) for t in tools or ()] or openai.omit,
            "tool_choice": _wire_tool_choice(tool_choice) if tools else openai.omit,
            "temperature": _or_omit(self.temperature),
            self.max_tokens_field: _or_omit(self.max_tokens),
        }

    async def _create(self, client: openai.AsyncOpenAI, request: dict[str, Any]) -> ChatCompletion:
        return await client.chat.completions.create(**request)

    async def _open_stream(
        self, client: openai.AsyncOpenAI, request: dict[str, Any]
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        return await client.chat.completions.create(
            **request, stream=True, stream_options={"include_usage": True}
        )

    def _streamed_reply(self) -> _StreamedReply:
        return _StreamedReply()

    def _stream_usage(
        self, reply: Any, messages: Sequence[ChatMessage], message: ChatMessage
    ) -> Usage:
        return self._usage_of(reply.usage, messages, message)

    def _response_of(
        self, completion: ChatCompletion, messages: Sequence[ChatMessage]
    ) -> ChatResponse:
        if not completion.choices:
            raise LLMError(
                f"{_label(self.base_url)} answered without a reply (no choices) for model "
                f"{self.model!r}; retry the step, or check the server's logs"
            )
        reply = completion.choices[0].message
        calls = tuple(
            ToolCall(
                id=call.id,
                name=call.function.name,
                args=parse_tool_arguments(call.function.arguments),
            )
            for call in reply.tool_calls or ()
            if call.type == "function"
        )
        content = reply.content or reply.refusal or ""
        message = ChatMessage(role="assistant", content=content, tool_calls=calls)
        usage = self._usage_of(completion.usage, messages, message)
        return ChatResponse(
            message=message,
            usage=usage,
            model=completion.model or self.model,
            finish_reason=completion.choices[0].finish_reason,
        )

    def _usage_of(
        self,
        reported: CompletionUsage | None,
        messages: Sequence[ChatMessage],
        reply: ChatMessage,
    ) -> Usage:
        if reported is not None:
            prompt, completion = reported.prompt_tokens_details, reported.completion_tokens_details
            usage = Usage(
                prompt_tokens=reported.prompt_tokens,
                completion_tokens=reported.completion_tokens,
                cached_tokens=prompt.cached_tokens if prompt else None,
                reasoning_tokens=completion.reasoning_tokens if completion else None,
            )
        else:  # Some compatible servers report no usage; an estimate beats showing zero.
            usage = Usage(
                prompt_tokens=estimate_tokens("".join(_text_of(m) for m in messages)),
                completion_tokens=estimate_tokens(_text_of(reply)),
                estimated=True,
            )
        return self.prices.with_cost(self.model, usage)

    def _map_errors(self, client: openai.AsyncOpenAI) -> AbstractContextManager[None]:
        key = client.api_key
        # The placeholder sent to local servers is no secret; redacting it would only garble.
        secret = key if isinstance(key, str) and key != _PLACEHOLDER_KEY else None
        return _map_api_errors(
            model=self.model,
            base_url=self.base_url,
            timeout=_timeout_of(client),
            secret=secret,
        )


# --- the client -----------------------------------------------------------------------------


def _resolve_base_url(base_url: str | None) -> str | None:
    url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    return OPENAI_COMPATIBLE_PRESETS.get(url, url) if url else None


def _make_client(api_key: str | None, base_url: str | None, timeout: float) -> openai.AsyncOpenAI:
    key = api_key
    if not key:
        if base_url is None:
            raise MissingKeyError(
                "OpenAILLM has no API key",
                hint="set the OPENAI_API_KEY environment variable or pass api_key=...; for a "
                "local OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio) pass "
                'base_url=... instead, e.g. base_url="ollama"',
                params={"provider": "openai", "key_env": "OPENAI_API_KEY"},
            )
        key = _PLACEHOLDER_KEY
    return openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout)


def _timeout_of(client: openai.AsyncOpenAI) -> float | None:
    timeout = client.timeout
    return float(timeout) if isinstance(timeout, int | float) else None


def _or_omit(value: float | None) -> float | openai.Omit:
    return openai.omit if value is None else value


# --- messages and tools on the wire ---------------------------------------------------------


def _wire_message(message: ChatMessage) -> ChatCompletionMessageParam:
    if message.role == "tool":
        if message.tool_call_id is None:
            # The API rejects a tool result that answers no call; as user text the model
            # still sees it.
            label = f"Result of tool {message.name}" if message.name else "Tool result"
            return {"role": "user", "content": f"{label}:\n{message.content}"}
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant":
        return _wire_assistant(message)
    if message.role == "system":
        if message.name:
            return {"role": "system", "content": message.content, "name": message.name}
        return {"role": "system", "content": message.content}
    content = _wire_parts(message) if message.images else message.content
    if message.name:
        return {"role": "user", "content": content, "name": message.name}
    return {"role": "user", "content": content}


def _wire_parts(message: ChatMessage) -> list[ChatCompletionContentPartParam]:
    # An image goes as a data URL: the API fetches nothing, and the task's record is the image.
    return [
        {"type": "image_url", "image_url": {"url": part.data_url}}
        if isinstance(part, ImagePart)
        else {"type": "text", "text": part.text}
        for part in message.parts
    ]


def _wire_assistant(message: ChatMessage) -> ChatCompletionMessageParam:
    if not message.tool_calls:
        return {"role": "assistant", "content": message.content}
    calls: list[ChatCompletionMessageFunctionToolCallParam] = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": _dump_args(call.args)},
        }
        for call in message.tool_calls
    ]
    # "" rather than null: OpenAI takes both, but some compatible servers (llama.cpp's) fail
    # to template a null content and answer 500.
    return {"role": "assistant", "content": message.content, "tool_calls": calls}


def _wire_tool_choice(choice: ToolChoice | None) -> Any:
    """OpenAI's form of `choice`; "auto" when none was made (the API's own default)."""
    mode, name = resolve_tool_choice(choice or "auto")
    if name is None:
        return mode
    return {"type": "function", "function": {"name": name}}


def _wire_tool(spec: ToolSpec) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


def _dump_args(args: Mapping[str, Any]) -> str:
    raw = args.get(RAW_TOOL_ARGUMENTS)
    if len(args) == 1 and isinstance(raw, str):
        return raw  # Show the model exactly what it wrote, so it can see its mistake.
    return json.dumps(args, ensure_ascii=False)


def _text_of(message: ChatMessage) -> str:
    return message.content + "".join(_dump_args(c.args) for c in message.tool_calls)


# --- streaming ------------------------------------------------------------------------------


@dataclass
class _PartialCall:
    index: int
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _StreamedReply:
    """Accumulates a streamed reply: text, tool calls by index, usage and model name."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: list[_PartialCall] = []
        self.usage: CompletionUsage | None = None
        self.model: str | None = None
        self.finish_reason: str | None = None

    @property
    def text(self) -> str:
        """The text streamed so far."""
        return "".join(self._text)

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take in one chunk; return its text delta."""
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            self.usage = chunk.usage
        delta_text = ""
        for choice in chunk.choices:
            if choice.index != 0:  # Only one reply is asked for (n=1).
                continue
            delta_text += (choice.delta.content or "") + (choice.delta.refusal or "")
            self.finish_reason = choice.finish_reason or self.finish_reason
            for call in choice.delta.tool_calls or ():
                self._add_call(call)
        self._text.append(delta_text)
        return delta_text

    def _add_call(self, delta: ChoiceDeltaToolCall) -> None:
        index = delta.index if delta.index is not None else len(self._calls)
        slot = next((c for c in reversed(self._calls) if c.index == index), None)
        # Some compatible servers send every parallel call at index 0, told apart by id.
        if slot is None or (delta.id and slot.id and delta.id != slot.id):
            slot = _PartialCall(index=index)
            self._calls.append(slot)
        slot.id = delta.id or slot.id
        if delta.function is not None:
            slot.name = slot.name or delta.function.name or ""
            slot.arguments.append(delta.function.arguments or "")

    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The complete tool calls, in the order they started."""
        return tuple(
            ToolCall(
                id=call.id or f"call_{position}",
                name=call.name,
                args=parse_tool_arguments("".join(call.arguments)),
            )
            for position, call in enumerate(self._calls)
        )


# --- errors ---------------------------------------------------------------------------------


def _label(base_url: str) -> str:
    return "OpenAI" if _OPENAI_HOST in base_url else f"the server at {safe_url(base_url)}"


@contextmanager
def _map_api_errors(
    *, model: str, base_url: str, timeout: float | None, secret: str | None
) -> Iterator[None]:
    """Translate every SDK exception raised inside into an `LLMError` a person can act on."""
    try:
        yield
    except openai.APIStatusError as err:
        raise _status_error(err, model=model, base_url=base_url, secret=secret) from None
    except openai.APITimeoutError:
        raise _timeout_error(model=model, base_url=base_url, timeout=timeout) from None
    except openai.APIConnectionError as err:
        cause = redact(str(err.__cause__ or err), secret)
        raise LLMConnectionError(
            f"could not reach the server at {safe_url(base_url)} ({scrub(cause)})",
            hint="check that it is running, that the base URL is right, and your network",
        ) from None
    except openai.OpenAIError as err:
        detail = redact(_detail_of(err), secret)
        raise LLMError(
            f"{_label(base_url)} failed (model {model!r}): {detail}",
            hint="retry the step, or check the server's logs",
            remedy="retry",
        ) from None


def _timeout_error(*, model: str, base_url: str, timeout: float | None) -> LLMTimeoutError:
    waited = f" within {timeout:g}s" if timeout is not None else " in time"
    message = f"{_label(base_url)} did not answer{waited} (model {model!r})"
    if not busy_after_timeout("openai", base_url):
        return LLMTimeoutError(
            message, hint="retry the step, or use a larger timeout for slow models"
        )
    return LLMTimeoutError(
        f"{message}; it may still be busy generating that reply, so a retry now would wait "
        "behind it",
        hint="wait until the server is idle before running the step again; cap replies with "
        "max_tokens (a small model may write until its context is full), or use a larger "
        "timeout",
        code="model_busy",
        retryable=False,
        params={"timeout_s": timeout},
    )


def _status_error(
    err: openai.APIStatusError, *, model: str, base_url: str, secret: str | None
) -> LLMError:
    status = err.status_code
    wait = retry_after(status, err.response.headers)
    detail = redact(_detail_of(err), secret)
    text = _status_message(
        status, code=err.code, detail=detail, model=model, where=_label(base_url)
    )
    message, _, hint = text.rpartition("; ")
    if wait is not None:
        message += f" (the server asked to wait {wait:g}s)"
    out_of_quota = status == 429 and err.code == "insufficient_quota"
    return LLMStatusError(
        message,
        hint=hint,
        remedy=remedy_for_status(status),
        status=status,
        retry_after=wait,
        retryable=False if out_of_quota else None,
        request_id=err.response.headers.get("x-request-id"),
        # The server's own words, whole, for a face to show and for a repeated 5xx's message.
        params={"server": _label(base_url), "detail": detail},
    )


def _status_message(status: int, *, code: str | None, detail: str, model: str, where: str) -> str:
    if status == 401:
        return f"{where} rejected the API key (401); check the key (OPENAI_API_KEY)"
    if status == 403:
        return (
            f"{where} refused access to model {model!r} (403): {detail}; check that your key's "
            "project or organisation may use this model"
        )
    if status == 404:
        return (
            f"model {model!r} was not found at {where} (404): {detail}; check the model name "
            "(e.g. gpt-4o-mini) or, on a local server, that the model is pulled and loaded"
        )
    if status == 429 and code == "insufficient_quota":
        return f"{where} says the account is out of quota (429): {detail}; check your billing"
    if status == 429:
        return (
            f"{where} rate-limited the call to {model!r} (429): {detail}; wait a moment and run "
            "the step again, or run fewer calls at once"
        )
    if status == 400 and code == "context_length_exceeded":
        return (
            f"the conversation is too long for {model!r}'s context window (400 "
            f"context_length_exceeded): {detail}; run fewer steps in this task, or lower the "
            "memory token limit so less history is sent"
        )
    if status in OVERLOADED_STATUSES:
        return (
            f"{where} is overloaded ({status}): {detail}; this is usually temporary, run the "
            "step again in a moment"
        )
    if status in GATEWAY_STATUSES:
        return (
            f"a gateway in front of {where} got no answer from the model server behind it "
            f"({status}): {detail}; that server may be down or restarting: run the step again "
            "once it is back"
        )
    if status >= 500:
        return (
            f"{where} had a server error ({status}): {detail}; run the step again once: a "
            "server error that repeats means the server cannot handle this request"
        )
    return (
        f"{where} refused the request ({status}): {detail}; fix the request and run the step again"
    )


def _detail_of(err: openai.OpenAIError) -> str:
    body = getattr(err, "body", None)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        detail = body["message"]
    elif isinstance(body, str) and body.strip():
        detail = body
    else:
        detail = getattr(err, "message", None) or str(err)
    return shorten(detail)
