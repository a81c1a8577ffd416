from __future__ import annotations

import asyncio

import pytest

from agent_core.errors import AgentCoreError, LLMError
from agent_core.llms import (
    LLM,
    ChatMessage,
    ChatResponse,
    ChatStreamEvent,
    FunctionLLM,
    ScriptedLLM,
    ToolCall,
    ToolSpec,
    Usage,
)

QUESTION = [ChatMessage(role="user", content="What is (121 * 3) + 42?")]
ADD = ToolSpec(name="add", description="Add two integers.")


async def collect(llm: LLM, messages: list[ChatMessage]) -> list[ChatStreamEvent]:
    return [event async for event in llm.stream_chat(messages)]


# --- ScriptedLLM -------------------------------------------------------------------------


async def test_scripted_llm_replies_in_order_and_counts_down() -> None:
    llm = ScriptedLLM(["first", "second"])

    assert (llm.remaining, llm.exhausted) == (2, False)
    first = await llm.chat(QUESTION)
    assert (first.text, first.message.role, first.model) == ("first", "assistant", "scripted")
    assert (llm.remaining, llm.exhausted) == (1, False)
    second = await llm.chat(QUESTION)
    assert second.text == "second"
    assert (llm.remaining, llm.exhausted) == (0, True)


async def test_scripted_llm_raises_a_helpful_llm_error_once_exhausted() -> None:
    llm = ScriptedLLM(["only"], model="demo")
    await llm.chat(QUESTION)

    with pytest.raises(LLMError) as info:
        await llm.chat(QUESTION)

    message = str(info.value)
    assert "'demo'" in message
    assert "all 1 scripted replies were used" in message
    assert "add_replies" in message
    assert isinstance(info.value, AgentCoreError)


async def test_empty_script_raises_on_first_call() -> None:
    llm = ScriptedLLM([])

    assert llm.exhausted
    with pytest.raises(LLMError, match="no reply left"):
        await llm.chat(QUESTION)


async def test_add_replies_extends_an_exhausted_script() -> None:
    llm = ScriptedLLM(["a"])
    await llm.chat(QUESTION)

    llm.add_replies("b", "c")

    assert llm.remaining == 2
    assert [(await llm.chat(QUESTION)).text for _ in range(2)] == ["b", "c"]
    assert llm.exhausted


async def test_scripted_llm_returns_a_chat_response_item_unchanged() -> None:
    response = ChatResponse(
        message=ChatMessage(
            role="assistant", tool_calls=(ToolCall(id="c1", name="add", args={"a": 1}),)
        ),
        usage=Usage(prompt_tokens=7, completion_tokens=3),
        model="recorded",
    )
    llm = ScriptedLLM([response])

    result = await llm.chat(QUESTION, tools=[ADD])

    assert result == response
    assert result.tool_calls[0].args == {"a": 1}
    assert result.usage.total_tokens == 10


async def test_scripted_llm_records_each_request_as_a_copy() -> None:
    llm = ScriptedLLM(["a", "b"])
    conversation = list(QUESTION)

    await llm.chat(conversation)
    conversation.append(ChatMessage(role="assistant", content="a"))
    await llm.chat(conversation)

    assert llm.requests == [QUESTION, [*QUESTION, ChatMessage(role="assistant", content="a")]]


async def test_a_script_item_that_is_not_a_reply_raises_llm_error() -> None:
    llm = ScriptedLLM([42])  # type: ignore[list-item]

    with pytest.raises(LLMError, match="returned a int; a scripted reply must be a str"):
        await llm.chat(QUESTION)


async def test_usage_estimates_are_non_zero_for_non_empty_text() -> None:
    llm = ScriptedLLM(["The answer is 405.", ""])

    usage = (await llm.chat(QUESTION)).usage
    empty = (await llm.chat([ChatMessage(role="user", content="")])).usage

    assert usage.prompt_tokens > 0
    assert usage.completion_tokens > 0
    assert (empty.prompt_tokens, empty.completion_tokens) == (0, 0)


def test_local_models_satisfy_the_llm_protocol() -> None:
    assert isinstance(ScriptedLLM([]), LLM)
    assert isinstance(FunctionLLM(lambda messages, tools: ""), LLM)


# --- Streaming ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 405.",
        "  leading and trailing spaces  ",
        'Thought: add\nAction: add\nAction Input: {"a": 1}\n\n',
        "tabs\tand\r\nCRLF",
        "one",
        "",
    ],
)
async def test_stream_chat_deltas_concatenate_to_the_text(text: str) -> None:
    llm = ScriptedLLM([text])

    events = await collect(llm, QUESTION)

    *deltas, last = events
    assert "".join(event.delta for event in deltas) == text
    assert all(event.response is None and event.delta for event in deltas)
    assert last.response is not None
    assert last.response.text == text
    assert last.delta == ""
    assert llm.exhausted
    assert llm.requests == [QUESTION]


async def test_stream_chat_yields_word_sized_deltas() -> None:
    events = await collect(ScriptedLLM(["The answer is 405."]), QUESTION)

    assert [event.delta for event in events[:-1]] == ["The ", "answer ", "is ", "405."]


async def test_stream_chat_raises_llm_error_once_exhausted() -> None:
    llm = ScriptedLLM([])

    with pytest.raises(LLMError):
        await collect(llm, QUESTION)


# --- FunctionLLM -------------------------------------------------------------------------


async def test_function_llm_reply_depends_on_the_request() -> None:
    def echo(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        return f"{messages[-1].content} | tools: {[t.name for t in tools]}"

    llm = FunctionLLM(echo)

    with_tools = await llm.chat(QUESTION, tools=[ADD])
    without = await llm.chat([ChatMessage(role="user", content="hi")])

    assert with_tools.text == "What is (121 * 3) + 42? | tools: ['add']"
    assert without.text == "hi | tools: []"
    assert with_tools.model == "function"
    assert with_tools.usage.completion_tokens > 0
    assert len(llm.requests) == 2


async def test_function_llm_accepts_an_async_function_returning_a_chat_response() -> None:
    async def call_add(messages: list[ChatMessage], tools: list[ToolSpec]) -> ChatResponse:
        await asyncio.sleep(0)
        call = ToolCall(id="c1", name=tools[0].name, args={"n": len(messages)})
        return ChatResponse(message=ChatMessage(role="assistant", tool_calls=(call,)))

    llm = FunctionLLM(call_add, model="fn")

    response = await llm.chat([*QUESTION, *QUESTION], tools=[ADD])

    assert response.tool_calls == (ToolCall(id="c1", name="add", args={"n": 2}),)


async def test_function_llm_streams_like_scripted() -> None:
    async def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        return "streamed " + messages[-1].content

    events = await collect(FunctionLLM(reply), QUESTION)

    assert "".join(e.delta for e in events[:-1]) == "streamed What is (121 * 3) + 42?"
    assert events[-1].response is not None


@pytest.mark.parametrize("bad", [None, 42, ["a"], {"text": "a"}])
async def test_function_llm_rejects_a_reply_that_is_not_str_or_chat_response(bad: object) -> None:
    sync_llm = FunctionLLM(lambda messages, tools: bad, model="mine")  # type: ignore[arg-type, return-value]

    async def async_fn(messages: list[ChatMessage], tools: list[ToolSpec]) -> object:
        return bad

    async_llm = FunctionLLM(async_fn)  # type: ignore[arg-type]

    with pytest.raises(LLMError, match=f"mine returned a {type(bad).__name__}"):
        await sync_llm.chat(QUESTION)
    with pytest.raises(LLMError, match="a str or a ChatResponse"):
        await async_llm.chat(QUESTION)


async def test_human_llm_returns_what_the_person_typed_and_asks_when_nothing_is_queued():
    from agent_core.llms import HumanLLM

    llm = HumanLLM()
    with pytest.raises(LLMError, match="type the model's reply"):
        await llm.chat([ChatMessage(role="user", content="hi")])
    llm.supply("Thought: easy.\nAnswer: hello")
    assert not llm.waiting
    reply = await llm.chat([ChatMessage(role="user", content="hi")])
    assert reply.text == "Thought: easy.\nAnswer: hello" and llm.waiting
    assert llm.requests[-1][0].content == "hi"


def test_a_typed_reply_costs_nothing_and_a_scripted_one_has_no_price() -> None:
    import asyncio

    from agent_core.llms import ChatMessage, HumanLLM, ScriptedLLM

    human = HumanLLM()
    human.supply("Answer: 3")
    asked = [ChatMessage(role="user", content="1 + 2?")]
    assert asyncio.run(human.chat(asked)).usage.cost_usd == 0.0
    # A script stands in for some real model, whose price it does not know.
    assert asyncio.run(ScriptedLLM(["3"]).chat(asked)).usage.cost_usd is None
