"""`SDKChatModel`: what every adapter over a provider's SDK shares.

- **One client per event loop.** An SDK client's connection pool (httpx, HTTP/1.1 keep-alive)
  belongs to the loop that opened its connections; reusing it from another loop fails ("bound
  to a different event loop"). The runner always calls models on its one runtime loop, but an
  adapter may also be awaited directly from `asyncio.run` calls or other loops: each loop gets
  its own client, made from the first one's settings, and dropped with its loop.
- **A client the caller passes in stays theirs**: its connection pool and settings are used
  on every loop, never rebuilt per loop and never closed. Only its own retrying is turned off
  (through `with_options`, which shares the pool), since it would multiply ours.
- **Retries** of a call (`with_retries`), **stream relay** (`relay_stream`) and the **error
  map** (`_errors`, one context manager per provider) are wired the same way for every SDK.

Subclasses say how to build a client, shape a request, call the API and read its answer.
"""

from __future__ import annotations

import asyncio
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import AbstractContextManager, aclosing
from typing import Any, Generic, TypeVar

from agent_core.errors import LLMConnectionError
from agent_core.llms._retry import RetryPolicy, with_retries
from agent_core.llms._wire import EventStream, StreamedReply, relay_stream
from agent_core.llms.base import (
    ChatMessage,
    ChatResponse,
    ChatStreamEvent,
    ToolChoice,
    ToolSpec,
    Usage,
)
from agent_core.llms.pricing import PriceTable
from agent_core.redaction import safe_url

__all__ = ["SDKChatModel"]

ClientT = TypeVar("ClientT")
CompletionT = TypeVar("CompletionT")
EventT = TypeVar("EventT")


class SDKChatModel(ABC, Generic[ClientT, CompletionT, EventT]):
    """Base of the adapters over an official SDK (`OpenAILLM`, `AnthropicLLM`)."""

    model: str
    _streams_tools: bool = True
    """False once the server dropped a stream with tools offered: ask it without streaming."""

    def __init__(
        self,
        model: str,
        *,
        client: ClientT | None,
        build_client: Callable[[], ClientT],
        prices: PriceTable | None,
        retry_policy: RetryPolicy,
    ) -> None:
        self.model = model
        self.prices = prices or PriceTable()
        self.retry_policy = retry_policy
        self._given = client is not None
        # The key lives only inside the SDK clients, so no repr, log or pickle of ours shows it.
        self._first: ClientT = self._without_retries(client) if client else build_client()
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ClientT] = (
            weakref.WeakKeyDictionary()
        )
        self.base_url = str(getattr(self._first, "base_url", "")).rstrip("/")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    # ------------------------------------------------------------------ the client per loop

    @property
    def client(self) -> ClientT:
        """The SDK client for the running event loop (the first one outside any loop)."""
        if self._given:
            return self._first
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self._first
        client = self._by_loop.get(loop)
        if client is None:
            # The first loop takes the client built up front; later loops get fresh ones.
            client = self._first if not self._by_loop else self._copy_client(self._first)
            self._by_loop[loop] = client
        return client

    @staticmethod
    def _without_retries(client: ClientT) -> ClientT:
        return client.with_options(max_retries=0)  # type: ignore[attr-defined]

    @abstractmethod
    def _copy_client(self, client: ClientT) -> ClientT:
        """A new client with `client`'s settings and a connection pool of its own."""

    # ------------------------------------------------------------------ the provider's part

    @abstractmethod
    def _request(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None,
        tool_choice: ToolChoice | None = None,
    ) -> dict[str, Any]:
        """The arguments one call sends, streamed or not.

        With tools and no `tool_choice`, "auto" is sent: some compatible servers (llama.cpp's)
        ignore the tools without one, and it is the providers' own default.
        """

    @abstractmethod
    async def _create(self, client: ClientT, request: dict[str, Any]) -> CompletionT:
        """Make one (non-streaming) call."""

    @abstractmethod
    async def _open_stream(self, client: ClientT, request: dict[str, Any]) -> EventStream[EventT]:
        """Open one streaming call."""

    @abstractmethod
    def _response_of(
        self, completion: CompletionT, messages: Sequence[ChatMessage]
    ) -> ChatResponse:
        """The reply of a finished call."""

    @abstractmethod
    def _streamed_reply(self) -> StreamedReply[EventT]:
        """A fresh accumulator for one streamed reply."""

    @abstractmethod
    def _stream_usage(
        self,
        reply: StreamedReply[EventT],
        messages: Sequence[ChatMessage],
        message: ChatMessage,
    ) -> Usage:
        """The usage of a finished streamed reply."""

    @abstractmethod
    def _map_errors(self, client: ClientT) -> AbstractContextManager[None]:
        """A context manager translating the SDK's exceptions into `LLMError`s."""

    # ------------------------------------------------------------------ the calls

    async def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: ToolChoice | None = None,
    ) -> ChatResponse:
        """Send `messages` (and the tools the model may call); return the model's reply."""
        request = self._request(messages, tools, tool_choice)
        client = self.client

        async def create() -> CompletionT:
            with self._map_errors(client):
                return await self._create(client, request)

        completion = await with_retries(create, self.retry_policy)
        return self._response_of(completion, messages)

    async def stream_chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: ToolChoice | None = None,
    ) -> AsyncIterator[ChatStreamEvent]:
        """Yield the reply's text deltas; the last event carries the whole `ChatResponse`.

        Only opening the stream is retried: once text has been shown, repeating the call
        would show a different reply. A server that cannot stream a reply with tools offered
        (llama.cpp's server refuses "automatic streaming tool choice" and drops the stream
        before sending anything) is asked again without streaming, and from then on this model
        asks it that way whenever tools are offered.
        """
        if tools and not self._streams_tools:
            yield await self._unstreamed(messages, tools, tool_choice)
            return
        try:
            async with aclosing(self._relay(messages, tools, tool_choice)) as events:
                async for event in events:
                    yield event
        except LLMConnectionError as error:
            if not tools or error.code != "model_stream_broken":
                raise
            self._streams_tools = False
            yield await self._unstreamed(messages, tools, tool_choice)

    async def _unstreamed(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None,
        tool_choice: ToolChoice | None,
    ) -> ChatStreamEvent:
        response = await self.chat(messages, tools=tools, tool_choice=tool_choice)
        return ChatStreamEvent(delta=response.message.content, response=response)

    def _relay(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None,
        tool_choice: ToolChoice | None,
    ) -> AsyncGenerator[ChatStreamEvent, None]:
        request = self._request(messages, tools, tool_choice)
        client = self.client

        async def open_stream() -> EventStream[EventT]:
            with self._map_errors(client):
                return await self._open_stream(client, request)

        reply = self._streamed_reply()
        return relay_stream(
            open_stream,
            reply,
            policy=self.retry_policy,
            errors=lambda: self._map_errors(client),
            usage_of=lambda message: self._stream_usage(reply, messages, message),
            default_model=self.model,
            where=f"the server at {safe_url(self.base_url)}",
        )
