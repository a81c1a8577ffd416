"""The loopback OpenAI server's quirks do what real local servers do, seen through plain httpx."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.llm_servers import LLAMA_CPP_QUIRKS, NULL_CONTENT_ERROR, OpenAIServer

ADD = {
    "type": "function",
    "function": {"name": "add", "parameters": {"type": "object"}},
}
ASK = {"model": "m", "messages": [{"role": "user", "content": "add 1 and 2"}]}


def _post(server: OpenAIServer, body: dict[str, Any], timeout: float = 5.0) -> httpx.Response:
    return httpx.post(server.url + "/v1/chat/completions", json=body, timeout=timeout)


def _sse_payloads(text: str) -> list[Any]:
    lines = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data:")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def test_no_quirk_keeps_the_old_behaviour() -> None:
    with OpenAIServer() as server:
        reply = _post(server, {**ASK, "tools": [ADD]}).json()
    assert reply["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "add"
    assert not server.quirk_hits


def test_tools_are_ignored_without_tool_choice() -> None:
    with OpenAIServer(quirks={"tools_need_tool_choice"}) as server:
        prose = _post(server, {**ASK, "tools": [ADD]}).json()["choices"][0]["message"]
        called = _post(server, {**ASK, "tools": [ADD], "tool_choice": "auto"}).json()
    assert "tool_calls" not in prose and prose["content"]
    assert called["choices"][0]["message"]["tool_calls"]
    assert server.quirk_hits["tools_need_tool_choice"] == 1


def test_null_content_gets_500_with_the_servers_text() -> None:
    messages = [*ASK["messages"], {"role": "assistant", "content": None, "tool_calls": []}]
    with OpenAIServer(quirks={"null_content_500"}) as server:
        refused = _post(server, {**ASK, "messages": messages})
        messages[-1]["content"] = ""
        accepted = _post(server, {**ASK, "messages": messages})
    assert refused.status_code == 500
    assert refused.json()["error"]["message"] == NULL_CONTENT_ERROR
    assert accepted.status_code == 200
    assert server.quirk_hits["null_content_500"] == 1


def test_broken_stream_opens_then_ends_with_nothing_sent() -> None:
    with OpenAIServer(quirks={"broken_stream"}) as server:
        response = _post(server, {**ASK, "stream": True})
    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["content-type"].startswith("text/event-stream")
    assert server.quirk_hits["broken_stream"] == 1


@pytest.mark.parametrize("cap_key", ["max_tokens", "max_completion_tokens"])
def test_endless_reply_stops_at_the_cap(cap_key: str) -> None:
    with OpenAIServer(quirks={"endless_reply"}) as server:
        plain = _post(server, {**ASK, cap_key: 5}).json()
        streamed = _post(server, {**ASK, cap_key: 4, "stream": True}).text
    assert plain["choices"][0]["finish_reason"] == "length"
    assert plain["choices"][0]["message"]["content"].split() == ["word"] * 5
    chunks = _sse_payloads(streamed)
    assert (
        "".join(c["choices"][0]["delta"].get("content", "") for c in chunks).split() == ["word"] * 4
    )
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_endless_reply_without_a_cap_never_ends() -> None:
    with OpenAIServer(quirks={"endless_reply"}) as server:
        with pytest.raises(httpx.ReadTimeout):
            _post(server, ASK, timeout=0.5)
        assert server.wait_until(lambda: server.disconnects == 1)


def test_no_stream_usage() -> None:
    body = {**ASK, "stream": True, "stream_options": {"include_usage": True}}
    with OpenAIServer() as server:
        with_usage = _sse_payloads(_post(server, body).text)
        server.quirks.add("no_stream_usage")
        without = _sse_payloads(_post(server, body).text)
    assert any(c.get("usage") for c in with_usage)
    assert not any(c.get("usage") for c in without)
    assert server.quirk_hits["no_stream_usage"] == 1


def test_stale_keepalive_drops_the_reused_connections_first_request() -> None:
    with OpenAIServer(quirks={"stale_keepalive"}) as server, httpx.Client() as client:
        url = server.url + "/v1/chat/completions"
        assert client.post(url, json=ASK).status_code == 200
        with pytest.raises(httpx.RemoteProtocolError):
            client.post(url, json=ASK)
        assert client.post(url, json=ASK).status_code == 200
    assert [r.dropped for r in server.model_requests] == [False, True, False]
    assert server.connections_accepted == 2


def test_unknown_quirk_is_refused() -> None:
    with pytest.raises(ValueError, match="no quirk"):
        OpenAIServer(quirks={"nope"})
    assert LLAMA_CPP_QUIRKS == {
        "tools_need_tool_choice",
        "null_content_500",
        "no_stream_usage",
        "streamed_tools_refused",
    }
