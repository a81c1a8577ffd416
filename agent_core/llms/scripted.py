"""Models that need no provider: fixed replies for tests and demos, or a Python callable."""

from __future__ import annotations

import inspect
import json
import operator
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence

from agent_core._tokens import CHARS_PER_TOKEN, estimate_tokens
from agent_core.errors import LLMError
from agent_core.llms.base import (
    ChatMessage,
    ChatResponse,
    ChatStreamEvent,
    ToolChoice,
    ToolSpec,
    Usage,
)

__all__ = ["FunctionLLM", "HumanLLM", "ScriptedLLM"]

Reply = str | ChatResponse
ReplyFn = Callable[[list[ChatMessage], list[ToolSpec]], Reply | Awaitable[Reply]]

_WORDS = re.compile(r"\S+\s*|\s+")
_CONTENT = operator.attrgetter("content")


def _as_response(
    reply: Reply, messages: Sequence[ChatMessage], model: str, tools: Sequence[ToolSpec] = ()
) -> ChatResponse:
    if isinstance(reply, ChatResponse):
        if reply.usage.total_tokens or reply.usage.cost_usd is not None:
            return reply  # The script says what the call cost.
        # Estimated like a text reply, so a tool-calling demo counts tokens as a ReAct one.
        calls = "".join(f"{call.name}{json.dumps(call.args)}" for call in reply.tool_calls)
        usage = _estimated_usage(messages, reply.text + calls, tools)
        return reply.model_copy(update={"usage": usage})
    if not isinstance(reply, str):
        raise LLMError(
            f"{model} returned a {type(reply).__name__}; a scripted reply must be a str or a "
            "ChatResponse"
        )
    return ChatResponse(
        message=ChatMessage(role="assistant", content=reply),
        usage=_estimated_usage(messages, reply, tools),
        model=model,
    )


def _estimated_usage(
    messages: Sequence[ChatMessage], reply: str, tools: Sequence[ToolSpec]
) -> Usage:
    # Counted in C (map/len): this runs every call over the whole history. Tool specs count
    # as a provider counts them: as part of the prompt.
    chars = sum(map(len, map(_CONTENT, messages)))
    chars += sum(len(spec.model_dump_json()) for spec in tools)
    prompt_tokens = -(-chars // CHARS_PER_TOKEN)
    return Usage(prompt_tokens=prompt_tokens, completion_tokens=estimate_tokens(reply))


def _free_of_charge(response: ChatResponse) -> ChatResponse:
    if response.usage.cost_usd is not None:
        return response
    return response.model_copy(
        update={"usage": response.usage.model_copy(update={"cost_usd": 0.0})}
    )


async def _stream_words(response: ChatResponse) -> AsyncIterator[ChatStreamEvent]:
    # Word-sized deltas make a scripted reply stream like a real one in the UI.
    for word in _WORDS.findall(response.text):
        yield ChatStreamEvent(delta=word)
    yield ChatStreamEvent(response=response)


class _NoNetworkLLM:
    """Shared behaviour of the local models: record each request, stream word by word."""

    model: str

    def __init__(self, model: str) -> None:
        self.model = model
        self.requests: list[list[ChatMessage]] = []
        self.tool_choices: list[ToolChoice | None] = []
        """The `tool_choice` of each call, in order (a test reads what a step asked for)."""

    async def _reply(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> ChatResponse:
        raise NotImplementedError

    async def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: ToolChoice | None = None,
    ) -> ChatResponse:
        """Return the next reply and remember the messages (and tool choice) it was asked with."""
        request = list(messages)
        self.requests.append(request)
        self.tool_choices.append(tool_choice)
        return await self._reply(request, list(tools or ()))

    async def stream_chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: ToolChoice | None = None,
    ) -> AsyncIterator[ChatStreamEvent]:
        """Stream the next reply word by word; the last event holds the whole response."""
        response = await self.chat(messages, tools=tools, tool_choice=tool_choice)
        async for event in _stream_words(response):
            yield event


class ScriptedLLM(_NoNetworkLLM):
    """Replies with a fixed sequence of answers, one per call.

    Args:
        replies: Each item is the text of one reply, or a whole `ChatResponse` (for tool
            calls or usage).
        model: The name the model reports.

    Raises `LLMError` once every reply has been used, so a test sees an agent that asked the
    model more often than scripted.
    """

    def __init__(self, replies: Iterable[Reply], *, model: str = "scripted") -> None:
        super().__init__(model)
        self._replies = list(replies)
        self._next = 0

    @property
    def remaining(self) -> int:
        """How many scripted replies are still unused."""
        return len(self._replies) - self._next

    @property
    def exhausted(self) -> bool:
        """True once every scripted reply has been used."""
        return self.remaining == 0

    def add_replies(self, *replies: Reply) -> None:
        """Append more replies to the script."""
        self._replies.extend(replies)

    async def _reply(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> ChatResponse:
        if self.exhausted:
            raise LLMError(
                f"ScriptedLLM {self.model!r} has no reply left: all {len(self._replies)} "
                "scripted replies were used. Add replies (add_replies) or check why the agent "
                "asked the model again.",
                code="script_exhausted",
                params={"replies": len(self._replies)},
            )
        reply = self._replies[self._next]
        self._next += 1
        return _as_response(reply, messages, self.model, tools)


class FunctionLLM(_NoNetworkLLM):
    """Replies with whatever `fn(messages, tools)` returns: a str or a `ChatResponse`.

    `fn` may be sync or async; use it where the reply depends on the request. `free=True`
    says the model costs nothing (the demo model): its calls cost $0, not an unknown price.
    """

    def __init__(self, fn: ReplyFn, *, model: str = "function", free: bool = False) -> None:
        super().__init__(model)
        self._fn = fn
        self._free = free

    async def _reply(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> ChatResponse:
        reply = self._fn(messages, tools)
        if inspect.isawaitable(reply):
            reply = await reply
        response = _as_response(reply, messages, self.model, tools)
        return _free_of_charge(response) if self._free else response


class HumanLLM(_NoNetworkLLM):
    """A model that is you: every reply is typed by a person, who sees the exact prompt.

    `supply(reply)` queues the next reply; a call with none queued fails with an `LLMError`
    that says to type one, so the step is recorded as failed and can simply be run again.
    """

    def __init__(self, *, model: str = "you (typed replies)") -> None:
        super().__init__(model)
        self._queued: list[Reply] = []

    def supply(self, reply: Reply) -> None:
        """Queue the reply the next call returns."""
        self._queued.append(reply)

    def clear(self) -> None:
        """Drop queued replies (one typed for a step that failed before the model call)."""
        self._queued.clear()

    @property
    def waiting(self) -> bool:
        """True when no reply is queued."""
        return not self._queued

    async def _reply(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> ChatResponse:
        if not self._queued:
            raise LLMError(
                "the model here is you: type the model's reply for this step, then run it",
                code="human_reply_needed",
            )
        # A person's typed reply costs nothing.
        return _free_of_charge(_as_response(self._queued.pop(0), messages, self.model, tools))
