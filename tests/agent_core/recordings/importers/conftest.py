"""Fixtures of the importer tests: a store, a loopback OpenAI server, and agents to fork with."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent_core.spec import AgentSpec
from agent_core.store.memory import InMemoryStore
from tests.llm_servers import OpenAIServer, Reply, ReplyToolCall


@pytest.fixture
def store() -> InMemoryStore:
    """A fresh store."""
    return InMemoryStore()


@pytest.fixture
def model_server() -> Iterator[OpenAIServer]:
    """A loopback OpenAI server that calls `multiply(6, 7)`, then answers (one trace's worth)."""
    replies = [
        Reply(tool_calls=[ReplyToolCall("multiply", {"a": 6, "b": 7}, id="call_1")]),
        "The answer is 42.",
    ]
    with OpenAIServer(replies) as server:
        yield server


@pytest.fixture
def agent_on(monkeypatch: pytest.MonkeyPatch):
    """An `AgentSpec` of a function-calling agent with arithmetic tools on a loopback server."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")

    def make(server: OpenAIServer) -> AgentSpec:
        return AgentSpec(
            name="mine",
            worker="function_calling",
            provider="openai",
            model="loopback-model",
            base_url=server.url + "/v1",
            tools=("arithmetic",),
        )

    return make
