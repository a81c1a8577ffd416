"""Execute Agent through a llama.cpp-like loopback server (issue 20), on a real uvicorn."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.llm_servers import LLAMA_CPP_QUIRKS, NULL_CONTENT_ERROR, OpenAIServer, Reply
from tests.stepwise.server.test_execute import ADD, _execute, _tool_turn, _user, add_then_answer

MODEL = {"provider": "openai", "name": "loopback-model"}


@pytest.fixture
def local_server(monkeypatch: pytest.MonkeyPatch):
    with OpenAIServer(policy=add_then_answer, quirks=LLAMA_CPP_QUIRKS) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        yield server


def _events(text: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_tool_round_trip_through_a_llama_cpp_like_server(local_server, serve, stream) -> None:
    def step(client: httpx.Client, messages: list[dict]) -> dict[str, Any]:
        response = _execute(client, messages=messages, tools=[ADD], model=MODEL, stream=stream)
        assert response.status_code == 200, response.text
        if not stream:
            return response.json()["message"]
        kind, data = _events(response.text)[-1]
        assert kind == "message", data
        return data["message"]

    with httpx.Client(base_url=serve(), timeout=30) as client:
        messages = [_user("Add 2 and 3.")]
        asked = step(client, messages)
        [call] = asked["tool_requests"]  # tool_choice went out, so the server called the tool
        messages += _tool_turn([call], ["5"])
        answer = step(client, messages)

    assert answer["content"] == "The sum is 5."
    bodies = [r.json for r in local_server.model_requests]
    # Streamed, the server drops the first request that offers tools; it is asked again
    # unstreamed, and the server's model asks it that way from then on.
    assert [b["tool_choice"] for b in bodies] == ["auto"] * (3 if stream else 2)
    assert [bool(b.get("stream")) for b in bodies] == (
        [True, False, False] if stream else [False] * 2
    )
    assert local_server.quirk_hits["streamed_tools_refused"] == (1 if stream else 0)
    [assistant] = [m for m in bodies[-1]["messages"] if m["role"] == "assistant"]
    assert assistant["content"] == ""  # not null: this server answers 500 to null
    assert local_server.quirk_hits["null_content_500"] == 0


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_500_answers_with_the_servers_own_text_and_no_agent_protocol_route(
    local_server, serve, stream
) -> None:
    local_server.script(policy=lambda body: Reply(status=500, error=NULL_CONTENT_ERROR))
    with httpx.Client(base_url=serve(), timeout=30) as client:
        response = _execute(client, messages=[_user("hi")], model=MODEL, stream=stream)
    if stream:
        kind, body = _events(response.text)[-1]
        assert kind == "error"
        error = body["error"]
    else:
        assert response.status_code == 502
        error = response.json()["error"]
    assert "can only concatenate str" in error["message"]  # the useful end of the server's text
    assert error["reason"] == "model_request_refused"
    assert "temporary" not in error["message"] + error["hint"]
    assert "/ap/v1" not in error["hint"] and "POST" not in error["hint"]
    assert "will not help" in error["hint"]  # what to try, in a stateless call's words
    assert len(local_server.model_requests) == 2  # retried once, not three times
