"""AnthropicLLM through the real `anthropic` SDK over a transport serving recorded payloads.

The SDK 2.x is built on `httpx2`, and refuses `httpx` objects, so the mock transport and the
timeout exception come from `httpx2`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from agent_core import AgentRunner
from agent_core.errors import LLMError, UserError
from agent_core.events import StepCompletedEvent, TokenDeltaEvent
from agent_core.llms._retry import RetryPolicy
from agent_core.llms.anthropic import RAW_ARGUMENTS_KEY, AnthropicLLM
from agent_core.llms.base import ChatMessage, ToolCall, ToolSpec
from agent_core.llms.pricing import ModelPrice, PriceTable
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker

PAYLOADS = Path(__file__).parent / "payloads" / "anthropic"
KEY = "sk-ant-test"
BASE_URL = "https://api.anthropic.test"
FAST = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=0.01)

MULTIPLY = ToolSpec(
    name="multiply",
    description="Multiply two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)


def json_reply(
    name: str, status: int = 200, headers: dict[str, str] | None = None
) -> httpx2.Response:
    return httpx2.Response(
        status,
        content=(PAYLOADS / name).read_bytes(),
        headers={"content-type": "application/json", "request-id": "req_test", **(headers or {})},
    )


def sse_reply(name: str) -> httpx2.Response:
    return httpx2.Response(
        200,
        content=(PAYLOADS / name).read_bytes(),
        headers={"content-type": "text/event-stream", "request-id": "req_test"},
    )


class FakeAnthropic:
    """Serves the given replies in order and records each request's JSON body."""

    def __init__(self, *replies: httpx2.Response | Exception) -> None:
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[httpx2.Headers] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        self.headers.append(request.headers)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def client(self, *, max_retries: int = 0) -> anthropic.AsyncAnthropic:
        transport = httpx2.MockTransport(self.handle)
        return anthropic.AsyncAnthropic(
            api_key=KEY,
            base_url=BASE_URL,
            http_client=httpx2.AsyncClient(transport=transport),
            max_retries=max_retries,
        )

    def llm(self, model: str = "claude-sonnet-5", **kwargs: Any) -> AnthropicLLM:
        kwargs.setdefault("retry_policy", FAST)
        return AnthropicLLM(model, client=self.client(), **kwargs)


def timeout_error() -> Exception:
    return httpx2.ReadTimeout("The read operation timed out")


# --- requests and replies -------------------------------------------------------------------


async def test_plain_answer_sends_system_messages_tools_and_limits() -> None:
    fake = FakeAnthropic(json_reply("message_text.json"))
    llm = fake.llm(max_tokens=1024)

    response = await llm.chat(
        [
            ChatMessage(role="system", content="You are terse."),
            ChatMessage(role="system", content="Answer in English."),
            ChatMessage(role="user", content="What is the capital of France?"),
        ],
        tools=[MULTIPLY],
    )

    assert response.text == "Paris is the capital of France."
    assert response.tool_calls == ()
    assert response.model == "claude-sonnet-5"
    assert fake.bodies == [
        {
            "model": "claude-sonnet-5",
            "max_tokens": 1024,
            "system": "You are terse.\n\nAnswer in English.",
            "messages": [{"role": "user", "content": "What is the capital of France?"}],
            "tool_choice": {"type": "auto"},
            "tools": [
                {
                    "name": "multiply",
                    "description": "Multiply two integers.",
                    "input_schema": MULTIPLY.parameters,
                }
            ],
        }
    ]
    assert fake.headers[0]["authorization"] == f"Bearer {KEY}"


async def test_usage_of_a_known_model_has_a_cost() -> None:
    llm = FakeAnthropic(json_reply("message_text.json")).llm("claude-sonnet-5")

    usage = (await llm.chat([ChatMessage(role="user", content="hi")])).usage

    assert (usage.prompt_tokens, usage.completion_tokens) == (1200, 400)
    # claude-sonnet: $3 per million input tokens, $15 per million output tokens.
    assert usage.cost_usd == pytest.approx((1200 * 3 + 400 * 15) / 1_000_000)


async def test_usage_of_an_unpriced_model_counts_tokens_without_a_cost() -> None:
    llm = FakeAnthropic(json_reply("message_text.json")).llm("claude-experimental-1")

    usage = (await llm.chat([ChatMessage(role="user", content="hi")])).usage

    assert usage.total_tokens == 1600
    assert usage.cost_usd is None


async def test_a_price_override_prices_an_unknown_model() -> None:
    prices = PriceTable({"claude-experimental": ModelPrice(input_per_mtok=1, output_per_mtok=2)})
    llm = FakeAnthropic(json_reply("message_text.json")).llm("claude-experimental-1", prices=prices)

    usage = (await llm.chat([ChatMessage(role="user", content="hi")])).usage

    assert usage.cost_usd == pytest.approx((1200 * 1 + 400 * 2) / 1_000_000)


async def test_a_tool_use_block_becomes_a_tool_call() -> None:
    llm = FakeAnthropic(json_reply("message_tool_use.json")).llm()

    response = await llm.chat([ChatMessage(role="user", content="121 * 3?")], tools=[MULTIPLY])

    assert response.text == "I'll multiply the two numbers."
    assert response.tool_calls == (
        ToolCall(id="toolu_01A09q90qw90lq917835lq9", name="multiply", args={"a": 121, "b": 3}),
    )


async def test_two_tool_use_blocks_become_parallel_tool_calls_in_order() -> None:
    llm = FakeAnthropic(json_reply("message_parallel_tool_use.json")).llm()

    response = await llm.chat([ChatMessage(role="user", content="Do both.")], tools=[MULTIPLY])

    assert response.text == ""
    assert [(c.id, c.name, c.args) for c in response.tool_calls] == [
        ("toolu_01Bz7YpQ4mLkR2vXn9sTcD3e", "multiply", {"a": 121, "b": 3}),
        ("toolu_01Kd5WqJ8nHfT6rYb2xMvL7a", "add", {"a": 7, "b": 42}),
    ]


async def test_tool_results_after_one_assistant_turn_are_merged_into_one_user_turn() -> None:
    fake = FakeAnthropic(json_reply("message_text.json"))
    calls = (
        ToolCall(id="toolu_1", name="multiply", args={"a": 121, "b": 3}),
        ToolCall(id="toolu_2", name="add", args={"a": 7, "b": 42}),
    )

    await fake.llm().chat(
        [
            ChatMessage(role="system", content="Use the tools."),
            ChatMessage(role="user", content="Compute both."),
            ChatMessage(role="user", content="Please."),
            ChatMessage(role="assistant", content="Calling both.", tool_calls=calls),
            ChatMessage(role="tool", content="363", tool_call_id="toolu_1", name="multiply"),
            ChatMessage(role="tool", content="49", tool_call_id="toolu_2", name="add"),
            ChatMessage(role="user", content="Now explain."),
        ]
    )

    assert fake.bodies[0]["system"] == "Use the tools."
    assert fake.bodies[0]["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Compute both."},
                {"type": "text", "text": "Please."},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Calling both."},
                {"type": "tool_use", "id": "toolu_1", "name": "multiply", "input": calls[0].args},
                {"type": "tool_use", "id": "toolu_2", "name": "add", "input": calls[1].args},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "363"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "49"},
                {"type": "text", "text": "Now explain."},
            ],
        },
    ]


async def test_an_assistant_turn_of_only_tool_calls_sends_no_empty_text() -> None:
    fake = FakeAnthropic(json_reply("message_text.json"))
    call = ToolCall(id="toolu_1", name="multiply", args={"a": 2, "b": 3})

    await fake.llm().chat(
        [
            ChatMessage(role="user", content="2 * 3?"),
            ChatMessage(role="assistant", content="", tool_calls=(call,)),
            ChatMessage(role="tool", content="6", tool_call_id="toolu_1"),
        ]
    )

    assert fake.bodies[0]["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "multiply", "input": call.args}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "6"}],
        },
    ]


async def test_tool_results_come_before_text_in_a_merged_user_turn() -> None:
    fake = FakeAnthropic(json_reply("message_text.json"))
    call = ToolCall(id="toolu_1", name="multiply", args={"a": 2, "b": 3})

    await fake.llm().chat(
        [
            ChatMessage(role="user", content="2 * 3?"),
            ChatMessage(role="assistant", content="", tool_calls=(call,)),
            ChatMessage(role="user", content="Feedback: double-check it."),
            ChatMessage(role="tool", content="6", tool_call_id="toolu_1"),
        ]
    )

    # The API rejects a tool_result that follows text in the turn answering the tool_use.
    assert [block["type"] for block in fake.bodies[0]["messages"][2]["content"]] == [
        "tool_result",
        "text",
    ]


async def test_temperature_is_sent_only_when_set() -> None:
    fake = FakeAnthropic(json_reply("message_text.json"), json_reply("message_text.json"))
    message = [ChatMessage(role="user", content="hi")]

    await fake.llm().chat(message)
    await fake.llm(temperature=0.2).chat(message)

    assert "temperature" not in fake.bodies[0]
    assert fake.bodies[1]["temperature"] == 0.2


# --- streaming ------------------------------------------------------------------------------


async def test_streaming_text_yields_deltas_then_the_whole_response() -> None:
    fake = FakeAnthropic(sse_reply("stream_text.sse"))

    events = [e async for e in fake.llm().stream_chat([ChatMessage(role="user", content="?")])]

    assert fake.bodies[0]["stream"] is True
    assert [e.delta for e in events[:-1]] == ["Paris is", " the capital", " of France."]
    final = events[-1].response
    assert final is not None
    assert final.text == "Paris is the capital of France."
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (25, 9)
    assert final.usage.cost_usd == pytest.approx((25 * 3 + 9 * 15) / 1_000_000)


async def test_streamed_tool_use_is_assembled_from_json_fragments() -> None:
    fake = FakeAnthropic(sse_reply("stream_tool_use.sse"))

    events = [
        e
        async for e in fake.llm().stream_chat(
            [ChatMessage(role="user", content="Do both.")], tools=[MULTIPLY]
        )
    ]

    assert "".join(e.delta for e in events) == "I'll multiply them."
    final = events[-1].response
    assert final is not None
    assert final.tool_calls == (
        ToolCall(id="toolu_01T1x1fJ34qAmk2tNTrN7Up6", name="multiply", args={"a": 121, "b": 3}),
        ToolCall(id="toolu_01R8mWq3LzXc5VbN2kTy6HgJ", name="add", args={"a": 7, "b": 42}),
    )
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (472, 89)


async def test_streamed_tool_input_that_is_not_json_is_kept_raw() -> None:
    fake = FakeAnthropic(sse_reply("stream_tool_use_invalid_json.sse"))

    events = [e async for e in fake.llm().stream_chat([ChatMessage(role="user", content="?")])]

    final = events[-1].response
    assert final is not None
    assert final.tool_calls[0].name == "multiply"
    assert final.tool_calls[0].args == {RAW_ARGUMENTS_KEY: '{"a": 121, "b": '}


async def test_an_error_event_mid_stream_is_an_overloaded_llm_error() -> None:
    fake = FakeAnthropic(sse_reply("stream_overloaded_error.sse"))
    deltas: list[str] = []

    with pytest.raises(LLMError) as caught:
        async for event in fake.llm().stream_chat([ChatMessage(role="user", content="?")]):
            deltas.append(event.delta)

    assert deltas == ["Paris"]
    assert caught.value.status == 529
    assert "overloaded" in str(caught.value)


async def test_opening_a_stream_is_retried_after_a_rate_limit() -> None:
    fake = FakeAnthropic(
        json_reply("error_429.json", 429, {"retry-after": "1"}), sse_reply("stream_text.sse")
    )

    events = [e async for e in fake.llm().stream_chat([ChatMessage(role="user", content="?")])]

    assert len(fake.bodies) == 2
    assert events[-1].response is not None
    assert events[-1].response.text == "Paris is the capital of France."


# --- errors ---------------------------------------------------------------------------------


async def test_a_bad_key_fails_at_once_and_says_where_to_set_it() -> None:
    fake = FakeAnthropic(json_reply("error_401.json", 401))

    with pytest.raises(LLMError) as caught:
        await fake.llm().chat([ChatMessage(role="user", content="hi")])

    assert caught.value.status == 401
    assert "ANTHROPIC_API_KEY" in str(caught.value)
    assert caught.value.remedy == "configure_model"  # An app names its own key setting.
    assert "Settings" not in str(caught.value)  # The runtime names no page of the app.
    assert len(fake.bodies) == 1  # Repeating cannot fix a key.


@pytest.mark.parametrize(
    ("base_url", "server"),
    [
        ("https://api.anthropic.com", "Anthropic"),
        ("http://127.0.0.1:9/gateway", "the server at http://127.0.0.1:9/gateway"),
    ],
)
async def test_an_error_names_the_server_that_answered(base_url: str, server: str) -> None:
    fake = FakeAnthropic(json_reply("error_401.json", 401))
    client = anthropic.AsyncAnthropic(
        api_key=KEY,
        base_url=base_url,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(fake.handle)),
        max_retries=0,
    )

    with pytest.raises(LLMError) as caught:
        await AnthropicLLM("claude-sonnet-5", client=client).chat(
            [ChatMessage(role="user", content="hi")]
        )

    assert str(caught.value).startswith(f"{server} rejected the API key")
    assert caught.value.params["server"] == server  # A gateway is not called Anthropic.


async def test_permission_denied_names_the_model() -> None:
    body = {"type": "error", "error": {"type": "permission_error", "message": "no access"}}
    fake = FakeAnthropic(httpx2.Response(403, json=body))

    with pytest.raises(LLMError) as caught:
        await fake.llm("claude-opus-5").chat([ChatMessage(role="user", content="hi")])

    assert caught.value.status == 403
    assert "claude-opus-5" in str(caught.value)
    assert len(fake.bodies) == 1


async def test_an_unknown_model_is_named_in_the_error() -> None:
    fake = FakeAnthropic(json_reply("error_404.json", 404))

    with pytest.raises(LLMError) as caught:
        await fake.llm("claude-sonnet-9").chat([ChatMessage(role="user", content="hi")])

    assert caught.value.status == 404
    assert "claude-sonnet-9" in str(caught.value)
    assert "model" in str(caught.value)
    assert len(fake.bodies) == 1


async def test_a_rate_limit_is_retried_and_then_succeeds() -> None:
    fake = FakeAnthropic(
        json_reply("error_429.json", 429, {"retry-after": "2"}), json_reply("message_text.json")
    )

    response = await fake.llm().chat([ChatMessage(role="user", content="hi")])

    assert response.text == "Paris is the capital of France."
    assert len(fake.bodies) == 2


async def test_a_rate_limit_that_persists_reports_retry_after() -> None:
    limited = [json_reply("error_429.json", 429, {"retry-after": "2"}) for _ in range(3)]
    fake = FakeAnthropic(*limited)
    policy = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.01)

    with pytest.raises(LLMError) as caught:
        await fake.llm(retry_policy=policy).chat([ChatMessage(role="user", content="hi")])

    assert len(fake.bodies) == 3  # The first try and two retries.
    assert caught.value.status == 429
    assert caught.value.retry_after == 2.0
    assert "rate-limited" in str(caught.value)
    assert "wait 2s" in str(caught.value)


async def test_overloaded_is_retried_and_then_succeeds() -> None:
    fake = FakeAnthropic(json_reply("error_529.json", 529), json_reply("message_text.json"))

    response = await fake.llm().chat([ChatMessage(role="user", content="hi")])

    assert response.text == "Paris is the capital of France."
    assert len(fake.bodies) == 2


async def test_overloaded_that_persists_says_it_is_temporary() -> None:
    fake = FakeAnthropic(*[json_reply("error_529.json", 529) for _ in range(2)])
    policy = RetryPolicy(max_retries=1, base_delay=0.001)

    with pytest.raises(LLMError) as caught:
        await fake.llm(retry_policy=policy).chat([ChatMessage(role="user", content="hi")])

    assert caught.value.status == 529
    assert "overloaded" in str(caught.value)


async def test_a_prompt_too_long_says_to_send_less_history() -> None:
    fake = FakeAnthropic(json_reply("error_400_prompt_too_long.json", 400))

    with pytest.raises(LLMError) as caught:
        await fake.llm().chat([ChatMessage(role="user", content="hi")])

    message = str(caught.value)
    assert caught.value.status == 400
    assert "too long" in message
    assert "215004 tokens > 200000 maximum" in message  # The API's own words.
    assert "fewer steps" in message
    assert "memory token limit" in message
    assert len(fake.bodies) == 1


async def test_another_invalid_request_quotes_the_api() -> None:
    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "temperature: Extra inputs are not permitted",
        },
    }
    fake = FakeAnthropic(httpx2.Response(400, json=body))

    with pytest.raises(LLMError) as caught:
        await fake.llm(temperature=0.5).chat([ChatMessage(role="user", content="hi")])

    assert "Extra inputs are not permitted" in str(caught.value)
    assert "without one" in str(caught.value)
    assert "too long" not in str(caught.value)


async def test_a_timeout_is_retried_and_then_reported_as_timed_out() -> None:
    fake = FakeAnthropic(*[timeout_error() for _ in range(2)])
    policy = RetryPolicy(max_retries=1, base_delay=0.001)

    with pytest.raises(LLMError) as caught:
        await fake.llm(retry_policy=policy).chat([ChatMessage(role="user", content="hi")])

    assert caught.value.timed_out is True
    assert caught.value.status is None
    assert "timeout" in str(caught.value)
    assert len(fake.bodies) == 2


async def test_a_timeout_then_an_answer_succeeds() -> None:
    fake = FakeAnthropic(timeout_error(), json_reply("message_text.json"))

    response = await fake.llm().chat([ChatMessage(role="user", content="hi")])

    assert response.text == "Paris is the capital of France."


async def test_a_connection_error_names_the_server() -> None:
    fake = FakeAnthropic(httpx2.ConnectError("Name or service not known"))

    with pytest.raises(LLMError) as caught:
        await fake.llm().chat([ChatMessage(role="user", content="hi")])

    assert BASE_URL in str(caught.value)
    assert "network" in str(caught.value)


async def test_a_given_client_does_not_retry_on_its_own() -> None:
    fake = FakeAnthropic(json_reply("error_529.json", 529))
    client = fake.client(max_retries=5)
    llm = AnthropicLLM(client=client, retry_policy=RetryPolicy(max_retries=0))

    with pytest.raises(LLMError):
        await llm.chat([ChatMessage(role="user", content="hi")])

    assert len(fake.bodies) == 1  # Not 6: only with_retries decides.


# --- the key --------------------------------------------------------------------------------


def test_a_missing_key_is_a_user_error_that_says_how_to_set_it() -> None:
    with pytest.raises(UserError) as caught:
        AnthropicLLM()

    assert "ANTHROPIC_API_KEY" in str(caught.value)
    assert "api_key" in str(caught.value)


def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env-0123")

    llm = AnthropicLLM("claude-haiku-5")

    assert llm.model == "claude-haiku-5"
    assert "sk-ant-from-env-0123" not in repr(llm)


def test_the_key_is_not_in_the_repr_or_the_adapter_state() -> None:
    llm = AnthropicLLM("claude-sonnet-5", api_key="sk-ant-secret-4242", base_url=BASE_URL)

    assert repr(llm) == f"AnthropicLLM(model='claude-sonnet-5', base_url='{BASE_URL}')"
    assert "sk-ant-secret-4242" not in repr(vars(llm))


async def test_the_key_never_appears_in_an_error_message() -> None:
    echoed = {
        "type": "error",
        "error": {"type": "authentication_error", "message": f"invalid x-api-key: {KEY}"},
    }
    fake = FakeAnthropic(httpx2.Response(401, json=echoed), timeout_error())
    llm = fake.llm(retry_policy=RetryPolicy(max_retries=0))

    for _ in range(2):
        with pytest.raises(LLMError) as caught:
            await llm.chat([ChatMessage(role="user", content="hi")])
        assert KEY not in str(caught.value)
        assert caught.value.__cause__ is None  # The SDK error (with its request) is dropped.


# --- end to end -----------------------------------------------------------------------------


def multiply(a: int, b: int) -> int:
    """Multiply two integers and return the result."""
    return a * b


async def test_a_react_agent_runs_on_anthropic_step_by_step() -> None:
    fake = FakeAnthropic(
        json_reply("message_react_action.json"), sse_reply("stream_react_answer.sse")
    )
    worker = ReActAgentWorker.from_tools([FunctionTool.from_defaults(fn=multiply)], llm=fake.llm())
    agent = AgentRunner(worker)
    task = agent.create_task("What is 121 * 3?")

    first = await agent.arun_step(task.task_id)
    events = [event async for event in agent.astream_step(task.task_id)]

    assert first.tool_calls[0].content == "363"
    assert first.usage.prompt_tokens == 521
    deltas = "".join(e.delta for e in events if isinstance(e, TokenDeltaEvent))
    assert deltas.endswith("Answer: 363")
    completed = events[-1]
    assert isinstance(completed, StepCompletedEvent)
    assert completed.output.is_last
    assert completed.output.usage.completion_tokens == 19
    assert str(agent.finalize_response(task.task_id)) == "363"
    # What the model saw: ReAct's system prompt at the top level, then the turns.
    second = fake.bodies[1]
    assert "multiply" in second["system"]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert second["messages"][-1]["content"] == "Observation: 363"
    assert fake.replies == []
