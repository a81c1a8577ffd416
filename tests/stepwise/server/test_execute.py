"""`POST /v1/agent/execute` on a real uvicorn, against loopback OpenAI and Anthropic servers."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import httpx
import pytest

from tests.llm_servers import (
    AnthropicServer,
    OpenAIServer,
    Reply,
    ReplyToolCall,
    last_tool_result,
    offered_tools,
)

KEY = "sk-test-secret-key-123456"
ADD = {
    "name": "add",
    "description": "Add two numbers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
}
MULTIPLY = {**ADD, "name": "multiply", "description": "Multiply two numbers."}


def add_then_answer(body: dict[str, Any]) -> Reply:
    """Ask for add(2, 3), then answer with what the tool returned."""
    result = last_tool_result(body)
    if result is None and "add" in offered_tools(body):
        return Reply(tool_calls=[ReplyToolCall("add", {"a": 2, "b": 3})])
    return Reply(text=f"The sum is {result}.")


@pytest.fixture
def openai_server(monkeypatch):
    with OpenAIServer(policy=add_then_answer, api_key=KEY) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        yield server


@pytest.fixture
def anthropic_server(monkeypatch):
    with AnthropicServer(policy=add_then_answer, api_key=KEY) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        yield server


def _execute(client: httpx.Client, **body: Any) -> httpx.Response:
    return client.post("/v1/agent/execute", json=body)


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def _tool_turn(requests: list[dict], outputs: list[str]) -> list[dict]:
    answers = [
        {"role": "tool", "tool_request_id": r["id"], "content": out}
        for r, out in zip(requests, outputs, strict=True)
    ]
    return [{"role": "agent", "tool_requests": requests}, *answers]


def test_without_a_model_the_scripted_demo_answers_and_says_it_is_scripted(client):
    messages = [_user("What is (121 * 3) + 42?")]
    tools = [ADD, MULTIPLY]
    first = _execute(client, messages=messages, tools=tools).json()
    assert first["model"] == {"provider": "demo", "name": first["model"]["name"], "scripted": True}
    [multiply] = first["message"]["tool_requests"]
    assert (multiply["name"], multiply["arguments"]) == ("multiply", {"a": 121, "b": 3})

    messages += _tool_turn([multiply], ["363"])
    [add] = _execute(client, messages=messages, tools=tools).json()["message"]["tool_requests"]
    messages += _tool_turn([add], ["405"])
    final = _execute(client, messages=messages, tools=tools).json()["message"]

    assert "405" in final["content"] and final.get("tool_requests") is None


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_tool_request_then_the_tool_output_then_the_answer(request, serve, provider: str) -> None:
    server = request.getfixturevalue(f"{provider}_server")
    model = {"provider": provider, "name": "loopback-model"}
    with httpx.Client(base_url=serve(), timeout=30) as client:
        messages = [_user("Add 2 and 3.")]
        asked = _execute(client, messages=messages, tools=[ADD], model=model).json()
        [call] = asked["message"]["tool_requests"]
        assert (call["name"], call["arguments"]) == ("add", {"a": 2, "b": 3})
        assert asked["usage"]["prompt_tokens"] == 11 and asked["model"]["scripted"] is False

        messages += _tool_turn([call], ["5"])
        answer = _execute(client, messages=messages, tools=[ADD], model=model).json()

    assert answer["message"] == {"role": "agent", "content": "The sum is 5.", "tool_requests": None}
    sent = json.dumps(server.model_requests[-1].json)
    assert call["id"] in sent  # The tool output went back as the answer to that call.


def test_two_parallel_tool_requests_must_both_be_answered(openai_server, serve):
    def both(body: dict[str, Any]) -> Reply:
        calls = [ReplyToolCall("add", {"a": 1, "b": 2}), ReplyToolCall("add", {"a": 3, "b": 4})]
        return Reply(tool_calls=calls)

    openai_server.script(policy=both)
    with httpx.Client(base_url=serve(), timeout=30) as client:
        model = {"provider": "openai", "name": "m"}
        asked = _execute(client, messages=[_user("two sums")], tools=[ADD], model=model).json()
        requests = asked["message"]["tool_requests"]
        assert [r["arguments"] for r in requests] == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]

        half = [_user("two sums"), *_tool_turn(requests, ["3", "7"])[:2]]
        refused = _execute(client, messages=half, tools=[ADD], model=model)

    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "invalid_conversation"
    assert requests[1]["id"] in refused.json()["error"]["message"]


def test_streaming_sends_text_deltas_then_the_message(openai_server, serve):
    openai_server.script(policy=lambda body: Reply(text="one two three four"))
    with httpx.Client(base_url=serve(), timeout=30) as client:
        body = {"messages": [_user("count")], "model": {"provider": "openai"}, "stream": True}
        with client.stream("POST", "/v1/agent/execute", json=body) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = [line for line in response.iter_lines() if line.startswith("event:")]
    kinds = [e.removeprefix("event: ") for e in events]
    assert kinds[-1] == "message" and set(kinds[:-1]) == {"delta"} and len(kinds) >= 3


def test_streamed_events_carry_the_whole_reply(openai_server, serve):
    openai_server.script(policy=lambda body: Reply(text="one two three four"))
    with httpx.Client(base_url=serve(), timeout=30) as client:
        body = {"messages": [_user("count")], "model": {"provider": "openai"}, "stream": True}
        raw = client.post("/v1/agent/execute", json=body).text
    blocks = [b for b in raw.split("\n\n") if b.strip()]
    data = [json.loads(b.split("data: ", 1)[1]) for b in blocks]
    text = "".join(d["delta"] for d in data[:-1])
    assert text == data[-1]["message"]["content"] == "one two three four"


def test_the_react_protocol_reads_the_models_text(openai_server, serve):
    openai_server.script(
        policy=lambda body: Reply(text='Thought: add.\nAction: add\nAction Input: {"a": 4, "b": 5}')
    )
    with httpx.Client(base_url=serve(), timeout=30) as client:
        body = {
            "messages": [_user("Add 4 and 5.")],
            "tools": [ADD],
            "model": {"provider": "openai"},
            "protocol": "react",
        }
        [call] = client.post("/v1/agent/execute", json=body).json()["message"]["tool_requests"]

    assert (call["name"], call["arguments"]) == ("add", {"a": 4, "b": 5})
    sent = openai_server.model_requests[-1].json
    assert "tools" not in sent  # The tools were described in the prompt instead.
    assert "Action Input" in sent["messages"][0]["content"]


BAD_REQUESTS = {
    "unknown-tool-request-id": (
        {"messages": [_user("hi"), {"role": "tool", "tool_request_id": "nope", "content": "1"}]},
        "invalid_conversation",
        "is not the id of any earlier tool request",
    ),
    "agent-with-neither": (
        {"messages": [_user("hi"), {"role": "agent"}, _user("again")]},
        "invalid_request",
        "either content or tool_requests",
    ),
    "agent-with-both": (
        {
            "messages": [
                _user("hi"),
                {"role": "agent", "content": "x", "tool_requests": [{"id": "1", "name": "add"}]},
            ]
        },
        "invalid_request",
        "either content or tool_requests",
    ),
    "duplicate-tools": (
        {"messages": [_user("hi")], "tools": [ADD, ADD]},
        "invalid_conversation",
        "two tools are named 'add'",
    ),
    "not-a-schema": (
        {"messages": [_user("hi")], "tools": [{**ADD, "parameters": {"type": "string"}}]},
        "invalid_conversation",
        "not a JSON Schema of an object",
    ),
    "key-in-the-request": (
        {"messages": [_user("hi")], "model": {"provider": "openai", "api_key": "sk-x"}},
        "invalid_request",
        "configured on the server",
    ),
    "no-messages": ({"messages": []}, "invalid_request", "messages"),
    "ends-with-the-agent": (
        {"messages": [_user("hi"), {"role": "agent", "content": "hello"}]},
        "invalid_conversation",
        "nothing for it to reply to",
    ),
}


@pytest.mark.parametrize("name", list(BAD_REQUESTS))
def test_a_bad_request_is_a_4xx_that_says_what_to_change(client, name):
    body, code, words = BAD_REQUESTS[name]
    response = client.post("/v1/agent/execute", json=body)
    assert 400 <= response.status_code < 500
    error = response.json()["error"]
    assert error["code"] == code and words in error["message"], error
    assert "Traceback" not in response.text


def test_more_messages_than_the_server_takes_are_refused(serve):
    with httpx.Client(base_url=serve(max_messages=3), timeout=30) as client:
        response = _execute(client, messages=[_user("x")] * 4)
    assert response.status_code == 422 and "condense" in response.json()["error"]["hint"]


def test_a_context_too_long_is_a_413_that_says_condense(anthropic_server, serve):
    anthropic_server.script(
        policy=lambda body: Reply(status=400, error="prompt is too long: 250000 tokens > 200000")
    )
    with httpx.Client(base_url=serve(), timeout=30) as client:
        response = _execute(client, messages=[_user("x")], model={"provider": "anthropic"})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "context_too_long"
    assert "condense" in response.json()["error"]["hint"]


def test_a_provider_without_a_key_on_the_server_is_a_503_naming_the_variable(serve, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with httpx.Client(base_url=serve(), timeout=30) as client:
        response = _execute(client, messages=[_user("x")], model={"provider": "openai"})
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "model_not_configured"
    assert "OPENAI_API_KEY" in response.text


def test_nothing_is_kept_between_calls_and_no_key_is_shown(openai_server, serve, settings):
    with httpx.Client(base_url=serve(), timeout=30) as client:
        body = {
            "messages": [_user("Add 2 and 3.")],
            "tools": [ADD],
            "model": {"provider": "openai"},
        }
        first, second = _execute(client, **body), _execute(client, **body)
    one, two = first.json()["message"], second.json()["message"]
    assert one["tool_requests"][0]["arguments"] == two["tool_requests"][0]["arguments"]
    with sqlite3.connect(settings.db) as db:
        assert db.execute("SELECT COUNT(*) FROM tasks").fetchone() == (0,)
    assert KEY not in first.text + second.text
