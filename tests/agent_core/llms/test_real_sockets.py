"""OpenAILLM and AnthropicLLM over real loopback sockets, from any thread and any event loop.

The adapters' other tests use an in-memory transport, which opens no socket and so cannot show
the bug that broke the app on its second step: a pooled keep-alive connection bound to the
first event loop, reused from the next one. These tests talk to `tests.llm_servers` over TCP.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agent_core.errors import LLMError
from agent_core.llms.anthropic import AnthropicLLM
from agent_core.llms.base import LLM, ChatMessage, ChatResponse, ChatStreamEvent, ToolCall, ToolSpec
from agent_core.llms.openai import OpenAILLM
from tests.llm_servers import (
    AnthropicServer,
    LoopbackModelServer,
    OpenAIServer,
    Reply,
    ReplyToolCall,
)

KEY = "sk-loopback-7f3a"
QUESTION = [ChatMessage(role="user", content="What is 1 + 2?")]
ADD = ToolSpec(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)


@dataclass
class Provider:
    """A loopback server and a way to build the adapter that talks to it."""

    name: str
    server: LoopbackModelServer
    make_llm: Callable[..., LLM]


def _openai(server: LoopbackModelServer, **kwargs: Any) -> LLM:
    kwargs.setdefault("api_key", KEY)
    return OpenAILLM(model="m", base_url=server.url + "/v1", max_retries=0, **kwargs)


def _anthropic(server: LoopbackModelServer, **kwargs: Any) -> LLM:
    kwargs.setdefault("api_key", KEY)
    return AnthropicLLM(model="m", base_url=server.url, max_retries=0, **kwargs)


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> Iterator[Provider]:
    if request.param == "openai":
        with OpenAIServer(api_key=KEY) as server:
            yield Provider("openai", server, lambda **kw: _openai(server, **kw))
    else:
        with AnthropicServer(api_key=KEY) as server:
            yield Provider("anthropic", server, lambda **kw: _anthropic(server, **kw))


async def collect(stream: AsyncIterator[ChatStreamEvent]) -> tuple[list[str], ChatResponse]:
    deltas: list[str] = []
    response = None
    async for event in stream:
        if event.delta:
            deltas.append(event.delta)
        if event.response is not None:
            response = event.response
    assert response is not None, "the stream ended without its final response"
    return deltas, response


# --- the wire formats ---------------------------------------------------------------------------


def test_chat_returns_text_and_usage_over_a_socket(provider: Provider) -> None:
    provider.server.script(Reply(text="It is 3.", prompt_tokens=21, completion_tokens=4))
    llm = provider.make_llm()

    response = asyncio.run(llm.chat(QUESTION))

    assert response.text == "It is 3."
    assert response.tool_calls == ()
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (21, 4)
    assert response.model == "m"
    (request,) = provider.server.model_requests
    assert request.json["model"] == "m"
    assert "What is 1 + 2?" in str(request.json["messages"])


def test_chat_returns_tool_calls_over_a_socket(provider: Provider) -> None:
    calls = [
        ReplyToolCall("add", {"a": 1, "b": 2}, id="call_a"),
        ReplyToolCall("add", {"a": 3, "b": 4}, id="call_b"),
    ]
    provider.server.script(Reply(text="Adding.", tool_calls=calls))
    llm = provider.make_llm()

    response = asyncio.run(llm.chat(QUESTION, tools=[ADD]))

    assert response.tool_calls == (
        ToolCall(id="call_a", name="add", args={"a": 1, "b": 2}),
        ToolCall(id="call_b", name="add", args={"a": 3, "b": 4}),
    )
    assert response.text == "Adding."
    (request,) = provider.server.model_requests
    assert "add" in str(request.json["tools"])


def test_stream_chat_streams_text_in_pieces_then_the_whole_reply(provider: Provider) -> None:
    text = "One plus two makes three."
    provider.server.script(Reply(text=text, prompt_tokens=30, completion_tokens=6))
    llm = provider.make_llm()

    deltas, response = asyncio.run(collect(llm.stream_chat(QUESTION)))

    assert len(deltas) > 1 and "".join(deltas) == text
    assert response.text == text
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (30, 6)
    (request,) = provider.server.model_requests
    assert request.json["stream"] is True
    assert request.finished


def test_stream_chat_assembles_streamed_tool_calls(provider: Provider) -> None:
    calls = [ReplyToolCall("add", {"a": 12, "b": 30}), ReplyToolCall("add", {"a": 5, "b": 6})]
    provider.server.script(Reply(tool_calls=calls, completion_tokens=9))
    llm = provider.make_llm()

    deltas, response = asyncio.run(collect(llm.stream_chat(QUESTION, tools=[ADD])))

    assert deltas == []
    assert [(c.name, c.args) for c in response.tool_calls] == [
        ("add", {"a": 12, "b": 30}),
        ("add", {"a": 5, "b": 6}),
    ]
    assert all(c.id for c in response.tool_calls)
    assert response.usage.completion_tokens == 9


@pytest.mark.parametrize("streamed", [False, True])
def test_the_finish_reason_and_cached_tokens_come_through(provider: Provider, streamed) -> None:
    """What the trace's model span shows: why the model stopped, prompt tokens from cache."""
    calls = [ReplyToolCall("add", {"a": 1, "b": 2})]
    provider.server.script(
        Reply(text="Hm.", prompt_tokens=40, cached_tokens=32),
        Reply(tool_calls=calls, prompt_tokens=40, cached_tokens=0),
    )
    llm = provider.make_llm()

    async def ask() -> ChatResponse:
        if streamed:
            return (await collect(llm.stream_chat(QUESTION, tools=[ADD])))[1]
        return await llm.chat(QUESTION, tools=[ADD])

    text, call = asyncio.run(ask()), asyncio.run(ask())

    stop, tool_use = (
        ("stop", "tool_calls") if provider.name == "openai" else ("end_turn", "tool_use")
    )
    assert (text.finish_reason, call.finish_reason) == (stop, tool_use)
    assert (text.usage.cached_tokens, call.usage.cached_tokens) == (32, 0)
    assert (text.usage + call.usage).cached_tokens == 32


def test_openai_reasoning_tokens_are_read_when_the_server_reports_them() -> None:
    replies = [Reply(text="4", completion_tokens=50, reasoning_tokens=44), Reply(text="5")]
    with OpenAIServer(replies) as server:
        llm = _openai(server)
        reasoned, plain = asyncio.run(llm.chat(QUESTION)), asyncio.run(llm.chat(QUESTION))
    assert reasoned.usage.reasoning_tokens == 44
    assert plain.usage.reasoning_tokens is None and plain.usage.cached_tokens is None


def test_openai_stream_asks_for_usage_and_gets_it_in_the_last_chunk() -> None:
    with OpenAIServer([Reply(text="hi there", prompt_tokens=8, completion_tokens=2)]) as server:
        llm = _openai(server)
        _, response = asyncio.run(collect(llm.stream_chat(QUESTION)))

    (request,) = server.model_requests
    assert request.json["stream_options"] == {"include_usage": True}
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (8, 2)


def test_the_api_key_reaches_the_server_in_the_providers_header(provider: Provider) -> None:
    llm = provider.make_llm()

    asyncio.run(llm.chat(QUESTION))

    (request,) = provider.server.model_requests
    # Anthropic's API documents `x-api-key`, but its SDK 2.x sends an api_key as a bearer token.
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_a_wrong_key_is_refused_with_401_and_the_error_hides_it(provider: Provider) -> None:
    wrong = "sk-wrong-key-9d41"
    llm = provider.make_llm(api_key=wrong)

    with pytest.raises(LLMError) as caught:
        asyncio.run(llm.chat(QUESTION))

    assert caught.value.status == 401
    assert "API key" in str(caught.value)
    assert wrong not in str(caught.value)


def test_calls_on_one_loop_reuse_one_keep_alive_connection(provider: Provider) -> None:
    llm = provider.make_llm()

    async def five_calls() -> None:
        for _ in range(3):
            await llm.chat(QUESTION)
        for _ in range(2):
            await collect(llm.stream_chat(QUESTION))

    asyncio.run(five_calls())

    assert len(provider.server.model_requests) == 5
    assert provider.server.connections_accepted == 1


def test_a_stream_stopped_midway_frees_the_server_and_the_next_call_works(
    provider: Provider,
) -> None:
    provider.server.script(Reply(text="one two three four five six", delay_s=0.2), "after")
    llm = provider.make_llm()

    async def stop_after_first_delta() -> str:
        stream = llm.stream_chat(QUESTION)
        first = await anext(stream)
        await stream.aclose()  # type: ignore[attr-defined]
        return first.delta

    async def stop_then_call_again() -> tuple[str, ChatResponse]:
        return await stop_after_first_delta(), await llm.chat(QUESTION)

    first, after = asyncio.run(stop_then_call_again())

    assert first == "one "
    assert after.text == "after"
    server = provider.server
    assert server.wait_until(lambda: server.disconnects == 1)
    stopped, answered = server.model_requests
    assert stopped.client_went_away and not stopped.finished
    assert answered.finished
    assert server.remaining == 0


# --- loop affinity: the bug the app hit on its second step ---------------------------------------


def test_one_adapter_serves_two_asyncio_runs_in_a_row(provider: Provider) -> None:
    llm = provider.make_llm()

    first = asyncio.run(llm.chat(QUESTION))
    second = asyncio.run(llm.chat(QUESTION))

    assert first.text and second.text
    assert len(provider.server.model_requests) == 2


def test_one_adapter_streams_in_two_asyncio_runs_in_a_row(provider: Provider) -> None:
    llm = provider.make_llm()

    for _ in range(2):
        deltas, response = asyncio.run(collect(llm.stream_chat(QUESTION)))
        assert "".join(deltas) == response.text != ""

    assert len(provider.server.model_requests) == 2


def test_one_adapter_serves_ten_fresh_threads_in_turn(provider: Provider) -> None:
    llm = provider.make_llm()
    texts: list[str] = []
    errors: list[BaseException] = []

    def one_rerun(stream: bool) -> None:
        try:
            if stream:
                _, response = asyncio.run(collect(llm.stream_chat(QUESTION)))
            else:
                response = asyncio.run(llm.chat(QUESTION))
            texts.append(response.text)
        except BaseException as exc:
            errors.append(exc)

    for turn in range(10):
        thread = threading.Thread(target=one_rerun, args=(turn % 2 == 1,))
        thread.start()
        thread.join()

    assert errors == []
    assert texts == ["Hello from the loopback model."] * 10


def test_one_adapter_serves_two_loops_at_once(provider: Provider) -> None:
    llm = provider.make_llm()
    both_in_flight = threading.Barrier(2, timeout=2)

    def wait_for_the_other(body: dict[str, Any]) -> Reply:
        both_in_flight.wait()  # Each loop's request is open before either is answered.
        return Reply(text="together")

    provider.server.script(policy=wait_for_the_other)
    results: list[str] = []
    errors: list[BaseException] = []

    def on_its_own_loop() -> None:
        try:
            results.append(asyncio.run(llm.chat(QUESTION)).text)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=on_its_own_loop) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert results == ["together", "together"]


# --- the loopback server itself ------------------------------------------------------------------


def test_a_server_whose_script_runs_out_answers_500_and_fails_the_test() -> None:
    with pytest.raises(AssertionError, match="no reply left"), OpenAIServer(["only one"]) as server:
        llm = _openai(server)
        assert asyncio.run(llm.chat(QUESTION)).text == "only one"
        with pytest.raises(LLMError) as caught:
            asyncio.run(llm.chat(QUESTION))
        assert caught.value.status == 500
        assert "no reply left" in str(caught.value)
