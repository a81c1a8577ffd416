"""Execute Agent's errors: a stateless call's hints, and the model server named as configured.

Issue 23, item 12: through an Anthropic-compatible address (`ANTHROPIC_BASE_URL`), a failed
call said "Anthropic ..." and advised to "run the step again", "edit the step's input" or
"undo the step": words for a task's step, on a route that has no task.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.llm_servers import AnthropicServer, Reply
from tests.stepwise.server.conftest import free_port

KEY = "sk-ant-test-key"
MODEL = {"provider": "anthropic", "name": "loopback-model"}
_TASK_WORDS = ("step", "/ap/v1", "/stepwise/v1", "undo", "task")


def _error(url: str, stream: bool) -> dict[str, Any]:
    body = {"messages": [{"role": "user", "content": "hi"}], "model": MODEL, "stream": stream}
    response = httpx.post(f"{url}/v1/agent/execute", json=body, timeout=60)
    if not stream:
        assert response.status_code == 502, response.text
        return response.json()["error"]
    last = response.text.strip().split("\n\n")[-1]
    lines = dict(line.split(": ", 1) for line in last.splitlines())
    assert lines["event"] == "error"
    return json.loads(lines["data"])["error"]


def _check_stateless(error: dict[str, Any], where: str) -> None:
    assert where in error["message"] and "Anthropic" not in error["message"]
    assert error["params"]["server"] == f"the server at {where}"
    hint = error["hint"].lower()
    assert not [word for word in _TASK_WORDS if word in hint], hint


@pytest.mark.parametrize(
    ("status", "says", "stream"),
    [
        (400, "change the conversation", False),
        (401, "ANTHROPIC_API_KEY", False),
        (404, "model's name", False),
        (429, "send the request again", False),
        (500, "will not help", False),  # failed twice: model_request_refused
        (500, "will not help", True),  # the stream's error event says the same
    ],
)
def test_a_model_failure_names_the_configured_server_and_fits_a_stateless_call(
    serve, monkeypatch, status, says, stream
):
    with AnthropicServer(
        policy=lambda body: Reply(status=status, error="scripted"), api_key=KEY
    ) as model:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", model.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        error = _error(serve(), stream)
        assert model.model_requests  # The failure is the server's, not a refusal of ours.
        where = model.url.removeprefix("http://")

    _check_stateless(error, where)
    assert says in error["hint"]
    assert error["params"]["detail"] == "scripted" and error["provider_status"] == status


def test_an_unreachable_server_is_named_as_configured_with_a_stateless_hint(serve, monkeypatch):
    port = free_port()  # Nothing listens there.
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)

    error = _error(serve(), stream=False)

    assert error["message"] == f"could not connect to the server at 127.0.0.1:{port}"
    assert "ANTHROPIC_BASE_URL" in error["hint"]
    assert not [word for word in _TASK_WORDS if word in error["hint"].lower()]
