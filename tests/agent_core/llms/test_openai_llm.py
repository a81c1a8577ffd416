"""OpenAILLM through the real `openai` SDK, served recorded wire payloads by an httpx transport."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from agent_core import AgentRunner
from agent_core._tokens import estimate_tokens
from agent_core.errors import LLMError, LLMStatusError, UserError
from agent_core.events import StepCompletedEvent, TokenDeltaEvent
from agent_core.llms._retry import RetryPolicy
from agent_core.llms.base import ChatMessage, ChatStreamEvent, ToolCall, ToolSpec
from agent_core.llms.openai import OPENAI_COMPATIBLE_PRESETS, RAW_ARGUMENTS_KEY, OpenAILLM
from agent_core.llms.pricing import ModelPrice, PriceTable
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker

PAYLOADS = Path(__file__).parent / "payloads" / "openai"
KEY = "sk-test"
BASE_URL = "https://api.openai.test/v1"
FAST = RetryPolicy(max_retries=2, base_delay=0.0, max_delay=0.0)

QUESTION = [ChatMessage(role="user", content="What is 121 * 3?")]
MULTIPLY = ToolSpec(
    name="multiply",
    description="Multiply two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)

Reply = httpx.Response | type[httpx.RequestError]


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


class RecordedOpenAI:
    """Serves the given replies in order and records every request it got."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        assert self.replies, "the adapter made more requests than the test scripted"
        reply = self.replies.pop(0)
        if isinstance(reply, httpx.Response):
            return reply
        raise reply("recorded transport error", request=request)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]


def payload(name: str) -> bytes:
    return (PAYLOADS / name).read_bytes()


def json_reply(name: str, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return httpx.Response(
        status,
        content=payload(name),
        headers={"content-type": "application/json", "x-request-id": "req_9f2c", **(headers or {})},
    )


def sse_reply(name: str) -> Reply:
    return httpx.Response(
        200, content=payload(name), headers={"content-type": "text/event-stream; charset=utf-8"}
    )


def sdk_client(server: RecordedOpenAI, base_url: str = BASE_URL) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key=KEY,
        base_url=base_url,
        # The SDK takes a plain httpx client at runtime; its annotation names httpx2 only.
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(server)),  # pyright: ignore[reportArgumentType]
        max_retries=0,
    )


def make_llm(*replies: Reply, **kwargs: Any) -> tuple[OpenAILLM, RecordedOpenAI]:
    server = RecordedOpenAI(*replies)
    kwargs.setdefault("retry_policy", FAST)
    return OpenAILLM(client=sdk_client(server), **kwargs), server


async def collect(
    llm: OpenAILLM, messages: list[ChatMessage], **kwargs: Any
) -> list[ChatStreamEvent]:
    return [event async for event in llm.stream_chat(messages, **kwargs)]


# --- chat -----------------------------------------------------------------------------------


async def test_chat_sends_the_conversation_and_tools_in_openai_shape() -> None:
    llm, server = make_llm(json_reply("chat_plain.json"))
    conversation = [
        ChatMessage(role="system", content="You are a calculator."),
        ChatMessage(role="user", content="What is (121 * 3) + 42?"),
        ChatMessage(
            role="assistant",
            tool_calls=(ToolCall(id="call_1", name="multiply", args={"a": 121, "b": 3}),),
        ),
        ChatMessage(role="tool", content="363", tool_call_id="call_1", name="multiply"),
        ChatMessage(role="assistant", content="Now I add 42."),
    ]

    response = await llm.chat(conversation, tools=[MULTIPLY])

    assert server.bodies == [
        {
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You are a calculator."},
                {"role": "user", "content": "What is (121 * 3) + 42?"},
                {
                    "role": "assistant",
                    "content": "",  # not null: llama.cpp's server answers 500 to null
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "multiply", "arguments": '{"a": 121, "b": 3}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "363"},
                {"role": "assistant", "content": "Now I add 42."},
            ],
            "tool_choice": "auto",  # some servers ignore tools without it
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "multiply",
                        "description": "Multiply two integers.",
                        "parameters": MULTIPLY.parameters,
                    },
                }
            ],
        }
    ]
    assert server.requests[0].url == f"{BASE_URL}/chat/completions"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert response.message == ChatMessage(
        role="assistant", content="121 times 3 is 363, and 363 plus 42 is 405."
    )
    assert response.model == "gpt-4o-mini-2024-07-18"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (87, 18)


async def test_chat_without_tools_or_temperature_sends_neither() -> None:
    server = RecordedOpenAI(json_reply("chat_plain.json"), json_reply("chat_plain.json"))
    client = sdk_client(server)

    await OpenAILLM(client=client).chat(QUESTION)
    await OpenAILLM(client=client, temperature=0.2).chat(QUESTION)

    assert "tools" not in server.bodies[0]
    assert "temperature" not in server.bodies[0]
    assert server.bodies[1]["temperature"] == 0.2


async def test_chat_returns_the_tool_call_the_model_asked_for() -> None:
    llm, _ = make_llm(json_reply("chat_tool_call.json"))

    response = await llm.chat(QUESTION, tools=[MULTIPLY])

    assert response.text == ""
    assert response.tool_calls == (
        ToolCall(id="call_Vq3fJ8nK2pLx9RtY7sWb4eHc", name="multiply", args={"a": 121, "b": 3}),
    )


async def test_parallel_tool_calls_come_back_as_several_tool_calls() -> None:
    llm, _ = make_llm(json_reply("chat_parallel_tool_calls.json"))

    response = await llm.chat(QUESTION, tools=[MULTIPLY])

    assert [(c.id, c.name, c.args) for c in response.tool_calls] == [
        ("call_8xGm2Nq4TzRb6Lw1Ks3Yp9Dv", "multiply", {"a": 121, "b": 3}),
        ("call_Hc5Jd7Pr1Fx3Qm8Vn2Wk6Ez0", "add", {"a": 2, "b": 40}),
    ]


async def test_invalid_json_arguments_reach_the_tool_as_a_bad_args_error() -> None:
    llm, server = make_llm(json_reply("chat_invalid_arguments.json"), json_reply("chat_plain.json"))

    response = await llm.chat(QUESTION, tools=[MULTIPLY])

    (call,) = response.tool_calls
    assert call.args == {RAW_ARGUMENTS_KEY: '{"a": 121, "b": 3'}
    tool = FunctionTool.from_defaults(fn=multiply)
    result = await tool.acall(call.args, call_id=call.id)
    assert result.is_error
    # Sent back, the model sees exactly the arguments it wrote.
    await llm.chat([*QUESTION, response.message], tools=[MULTIPLY])
    sent = server.bodies[1]["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert sent == '{"a": 121, "b": 3'


# --- streaming ------------------------------------------------------------------------------


async def test_stream_yields_text_deltas_then_the_whole_response() -> None:
    llm, server = make_llm(sse_reply("stream_plain.sse"))

    events = await collect(llm, QUESTION)

    deltas = [e.delta for e in events if e.delta]
    assert deltas == ["121", " times", " 3", " is", " ", "363", "."]
    final = events[-1].response
    assert final is not None
    assert final.text == "121 times 3 is 363."
    assert final.tool_calls == ()
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (87, 7)
    assert final.model == "gpt-4o-mini-2024-07-18"
    assert server.bodies[0]["stream"] is True
    assert server.bodies[0]["stream_options"] == {"include_usage": True}


async def test_stream_assembles_tool_calls_split_across_chunks() -> None:
    llm, _ = make_llm(sse_reply("stream_tool_calls.sse"))

    events = await collect(llm, QUESTION, tools=[MULTIPLY])

    assert [e.delta for e in events if e.delta] == []
    final = events[-1].response
    assert final is not None
    assert final.tool_calls == (
        ToolCall(id="call_Kp2Wx7Rn4Lz9Qs1Mv6Yb3Tc", name="multiply", args={"a": 121, "b": 3}),
        ToolCall(id="call_Dn8Fv3Hq5Jt1Xw7Pc2Rk9Ms", name="add", args={"a": 2, "b": 40}),
    )
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (142, 51)
    assert final.usage.cost_usd == pytest.approx((142 * 0.15 + 51 * 0.60) / 1e6)


async def test_stream_from_a_server_without_usage_estimates_tokens() -> None:
    server = RecordedOpenAI(sse_reply("stream_no_usage_ollama.sse"))
    llm = OpenAILLM("llama3.2", client=sdk_client(server, "http://localhost:11434/v1"))

    events = await collect(llm, QUESTION)

    final = events[-1].response
    assert final is not None
    assert final.text == "The answer is 405."
    assert final.usage.prompt_tokens == estimate_tokens(QUESTION[0].content)
    assert final.usage.completion_tokens == estimate_tokens("The answer is 405.")
    assert final.usage.cost_usd is None


async def test_stream_retries_a_rate_limit_before_any_text() -> None:
    llm, server = make_llm(
        json_reply("error_429_rate_limit.json", 429, {"retry-after": "1"}),
        sse_reply("stream_plain.sse"),
    )

    events = await collect(llm, QUESTION)

    assert events[-1].response is not None
    assert events[-1].response.text == "121 times 3 is 363."
    assert len(server.requests) == 2


async def test_an_error_mid_stream_becomes_an_llm_error_after_the_text_so_far() -> None:
    llm, server = make_llm(sse_reply("stream_error_midway.sse"))
    seen: list[str] = []

    with pytest.raises(LLMError) as info:
        async for event in llm.stream_chat(QUESTION):
            seen.append(event.delta)

    assert "".join(seen) == "The"
    assert "The server had an error while processing your request" in str(info.value)
    assert len(server.requests) == 1  # Text was shown: repeating would show another reply.


# --- errors ---------------------------------------------------------------------------------


async def test_a_rejected_key_says_where_to_fix_it_and_is_not_retried() -> None:
    server = RecordedOpenAI(json_reply("error_401_invalid_api_key.json", 401))
    llm = OpenAILLM(client=sdk_client(server, "https://api.openai.com/v1"), retry_policy=FAST)

    with pytest.raises(LLMError) as info:
        await llm.chat(QUESTION)

    assert str(info.value) == "OpenAI rejected the API key (401); check the key (OPENAI_API_KEY)"
    assert isinstance(info.value, LLMStatusError)
    assert info.value.status == 401
    assert info.value.remedy == "configure_model"  # An app names its own key setting.
    assert "Settings" not in str(info.value)  # The runtime names no page of the app.
    assert len(server.requests) == 1


async def test_an_unknown_model_is_named_and_not_retried() -> None:
    llm, server = make_llm(json_reply("error_404_model_not_found.json", 404), model="gpt-9-turbo")

    with pytest.raises(LLMError) as info:
        await llm.chat(QUESTION)

    assert info.value.status == 404
    assert "model 'gpt-9-turbo' was not found" in str(info.value)
    assert "check the model name" in str(info.value)
    assert len(server.requests) == 1


async def test_a_rate_limit_is_retried_and_then_succeeds() -> None:
    llm, server = make_llm(
        json_reply("error_429_rate_limit.json", 429, {"retry-after": "2"}),
        json_reply("chat_plain.json"),
    )

    response = await llm.chat(QUESTION)

    assert response.text.startswith("121 times 3 is 363")
    assert len(server.requests) == 2
    assert server.replies == []


async def test_an_exhausted_quota_is_not_retried() -> None:
    llm, server = make_llm(*[json_reply("error_429_insufficient_quota.json", 429)] * 3)

    with pytest.raises(LLMError) as info:
        await llm.chat(QUESTION)

    assert len(server.requests) == 1
    assert "out of quota" in str(info.value) and "billing" in str(info.value)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [({"retry-after": "2"}, 2.0), ({"retry-after-ms": "1500", "retry-after": "2"}, 1.5)],
)
async def test_a_rate_limit_that_persists_fails_with_the_servers_retry_after(
    headers: dict[str, str], seconds: float
) -> None:
    llm, server = make_llm(*[json_reply("error_429_rate_limit.json", 429, headers)] * 3)

    with pytest.raises(LLMError) as info:
        await llm.chat(QUESTION)

    assert len(server.requests) == 3  # The first try and FAST's two retries.
    assert (info.value.status, info.value.retry_after) == (429, seconds)
    assert "rate-limited" in str(info.value)
    assert f"wait {seconds:g}s" in str(info.value)
    assert "Limit 3, Used 3" in str(info.value)


async def test_a_context_too_long_suggests_fewer_steps_or_less_memory() -> None:
    llm, server = make_llm(json_reply("error_400_context_length.json", 400))

    with pytest.raises(LLMError) as info:
        await llm.chat(QUESTION)

    message = str(info.value)
    assert info.value.status == 400
    assert "too long for 'gpt-4o-mini'" in message
    assert "maximum context length is 128000 tokens" in message
    assert "fewer steps" in message
    assert "memory token limit" in message
    assert len(server.requests) == 1


async def test_another_bad_request_shows_the_apis_message() -> None:
    llm, _ = make_llm(json_reply("error_400_invalid_tools.json", 400))

    with pytest.raises(LLMError) as info:
        await llm.chat(QUESTION, tools=[MULTIPLY])

    assert info.value.status == 400
    assert "Invalid schema for function 'add'" in str(info.value)


async def test_a_server_error_is_retried_and_then_succeeds() -> None:
    llm, server = make_llm(
        json_reply("error_500_server_error.json", 500), json_reply("chat_plain.json")
    )

    response = await llm.chat(QUESTION)

    assert response.text.startswith("121 times 3 is 363")
    assert len(server.requests) == 2


async def test_a_server_error_that_repeats_is_retried_once_and_says_the_request_was_refused() -> (
    None
):
    llm, server = make_llm(*[json_reply("error_500_server_error.json", 500)] * 3)

    with pytest.raises(LLMError) as info:
        await llm.chat(QUESTION)

    assert info.value.status == 500
    assert info.value.code == "model_request_refused"
    assert "refused this request" in str(info.value) and "temporary" not in str(info.value)
    assert len(server.requests) == 2


async def test_a_timeout_is_retried_then_reported_as_timed_out() -> None:
    # OpenAI's own API: a timed-out call is not still running there, so it is retried.
    server = RecordedOpenAI(httpx.ReadTimeout, httpx.ReadTimeout, httpx.ReadTimeout)
    client = sdk_client(server, "https://api.openai.com/v1")
    llm = OpenAILLM(client=client, retry_policy=FAST)

    with pytest.raises(LLMError) as info:
        await llm.chat(QUESTION)

    assert (info.value.status, info.value.timed_out) == (None, True)
    assert "did not answer" in str(info.value)
    assert len(server.requests) == 3


async def test_a_timeout_then_an_answer_succeeds() -> None:
    server = RecordedOpenAI(httpx.ReadTimeout, json_reply("chat_plain.json"))
    client = sdk_client(server, "https://api.openai.com/v1")
    llm = OpenAILLM(client=client, retry_policy=FAST)

    response = await llm.chat(QUESTION)

    assert response.text.startswith("121 times 3")
    assert len(server.requests) == 2


async def test_an_unreachable_server_names_its_url() -> None:
    server = RecordedOpenAI(httpx.ConnectError, httpx.ConnectError)
    llm = OpenAILLM("llama3.2", client=sdk_client(server, "http://localhost:11434/v1"))

    with pytest.raises(LLMError) as info:
        await llm.chat(QUESTION)

    assert (info.value.status, info.value.timed_out) == (None, False)
    assert "could not reach the server at http://localhost:11434/v1" in str(info.value)
    assert len(server.requests) == 2  # once more, on a new connection, then no more


# --- the key stays secret -------------------------------------------------------------------


def test_repr_shows_model_and_base_url_but_never_the_key() -> None:
    llm = OpenAILLM("gpt-4o", api_key="sk-live-5ecret-7f3a9c")

    assert repr(llm) == "OpenAILLM(model='gpt-4o', base_url='https://api.openai.com/v1')"
    assert "5ecret" not in str(llm)
    held = {name: value for name, value in vars(llm).items() if name not in ("_first", "_by_loop")}
    assert "5ecret" not in repr(held)


@pytest.mark.parametrize(
    "reply",
    [
        json_reply("error_401_invalid_api_key.json", 401),
        json_reply("error_404_model_not_found.json", 404),
        json_reply("error_429_rate_limit.json", 429),
        json_reply("error_400_context_length.json", 400),
        json_reply("error_500_server_error.json", 500),
        httpx.Response(400, json={"error": {"message": f"bad header: Bearer {KEY}", "code": None}}),
        httpx.ReadTimeout,
        httpx.ConnectError,
    ],
)
async def test_no_error_message_contains_the_key(reply: Reply) -> None:
    llm, _ = make_llm(reply, retry_policy=RetryPolicy(max_retries=0))

    with pytest.raises(LLMError) as info:
        await llm.chat(QUESTION)

    assert KEY not in str(info.value)
    assert info.value.__cause__ is None


# --- prices ---------------------------------------------------------------------------------


async def test_a_known_model_has_a_cost_and_an_unknown_one_has_none() -> None:
    known, _ = make_llm(json_reply("chat_plain.json"))
    unknown, _ = make_llm(json_reply("chat_plain.json"), model="my-finetune")

    priced = await known.chat(QUESTION)
    unpriced = await unknown.chat(QUESTION)

    assert priced.usage.cost_usd == pytest.approx((87 * 0.15 + 18 * 0.60) / 1e6)
    assert unpriced.usage.cost_usd is None
    assert unpriced.usage.total_tokens == 105


async def test_a_custom_price_table_prices_a_local_model() -> None:
    prices = PriceTable({"my-finetune": ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0)})
    llm, _ = make_llm(json_reply("chat_plain.json"), model="my-finetune", prices=prices)

    response = await llm.chat(QUESTION)

    assert response.usage.cost_usd == pytest.approx((87 * 1.0 + 18 * 2.0) / 1e6)


# --- construction ---------------------------------------------------------------------------


def test_no_key_no_env_and_no_base_url_is_a_user_error() -> None:
    with pytest.raises(UserError) as info:
        OpenAILLM()

    assert "OPENAI_API_KEY" in str(info.value)
    assert "api_key" in str(info.value)


def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-0b1c")

    llm = OpenAILLM()

    assert llm.base_url == "https://api.openai.com/v1"
    assert "0b1c" not in repr(llm)


def test_a_base_url_from_the_environment_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")

    assert OpenAILLM("qwen2.5").base_url == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        (OPENAI_COMPATIBLE_PRESETS["ollama"], "http://localhost:11434/v1"),
        ("vllm", "http://localhost:8000/v1"),
        ("llama.cpp", "http://localhost:8080/v1"),
        ("lm-studio", "http://localhost:1234/v1"),
    ],
)
def test_a_local_server_needs_no_key(base_url: str, expected: str) -> None:
    llm = OpenAILLM("llama3.2", base_url=base_url)

    assert llm.base_url == expected
    assert repr(llm) == f"OpenAILLM(model='llama3.2', base_url='{expected}')"


# --- end to end -----------------------------------------------------------------------------


async def test_a_react_agent_answers_through_openai() -> None:
    llm, server = make_llm(
        json_reply("chat_react_action.json"), json_reply("chat_react_answer.json")
    )
    agent = AgentRunner(
        ReActAgentWorker.from_tools([FunctionTool.from_defaults(fn=multiply)], llm=llm)
    )

    response = await agent.achat("What is 121 * 3?")

    assert str(response) == "363"
    second = server.bodies[1]["messages"]
    assert second[0]["role"] == "system"
    assert second[-1] == {"role": "user", "content": "Observation: 363"}
    assert agent.get_task(response.task_id).usage.prompt_tokens == 312 + 356


async def test_a_streamed_step_shows_openai_tokens_as_they_arrive() -> None:
    llm, _ = make_llm(sse_reply("stream_plain.sse"))
    agent = AgentRunner(
        ReActAgentWorker.from_tools([FunctionTool.from_defaults(fn=multiply)], llm=llm)
    )
    task = agent.create_task("What is 121 * 3?")

    events = [event async for event in agent.astream_step(task.task_id)]

    deltas = [e.delta for e in events if isinstance(e, TokenDeltaEvent)]
    assert "".join(deltas) == "121 times 3 is 363."
    completed = events[-1]
    assert isinstance(completed, StepCompletedEvent)
    assert completed.output.usage.completion_tokens == 7


def test_an_openai_key_from_the_environment_never_goes_to_another_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")
    local = OpenAILLM("llama3.2", base_url="ollama")
    assert local.client.api_key != "sk-real-openai-key"
    assert OpenAILLM("gpt-4o-mini").client.api_key == "sk-real-openai-key"
