"""OpenAILLM against the quirks of real local OpenAI-compatible servers (llama.cpp's), over TCP.

Each test switches on one quirk of `tests.llm_servers.OpenAIServer` and asserts both that the
fault was injected (`quirk_hits`) and that Stepwise copes with it the way issue 20 asks.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent_core.llms.base import ChatMessage, ChatResponse, ToolSpec
from agent_core.llms.catalog import infer_model, reply_cap_field
from agent_core.llms.openai import OpenAILLM
from agent_core.spec import AgentSpec
from tests.llm_servers import OpenAIServer

QUESTION = [ChatMessage(role="user", content="What is 1 + 2?")]
ADD = ToolSpec(name="add", description="Add two integers.")


def _llm(server: OpenAIServer, **kwargs: Any) -> OpenAILLM:
    kwargs.setdefault("max_retries", 0)
    return OpenAILLM(model="m", base_url=server.url + "/v1", **kwargs)


async def _streamed(llm: OpenAILLM, messages: list[ChatMessage], **kwargs: Any) -> ChatResponse:
    final = None
    async for event in llm.stream_chat(messages, **kwargs):
        final = event.response or final
    assert final is not None
    return final


# --- 4. a cap on the reply -------------------------------------------------------------------


def test_reply_cap_field_is_decided_per_server() -> None:
    assert reply_cap_field("openai", None) == "max_completion_tokens"
    assert reply_cap_field("openai", "https://api.openai.com/v1") == "max_completion_tokens"
    assert reply_cap_field("openai", "http://127.0.0.1:8080/v1") == "max_tokens"
    assert reply_cap_field("anthropic", None) == "max_tokens"


def test_spec_max_tokens_caps_an_endless_reply_on_a_compatible_server() -> None:
    with OpenAIServer(quirks={"endless_reply"}) as server:
        spec = AgentSpec(provider="openai", model="m", base_url=server.url + "/v1", max_tokens=6)
        llm = spec.build_llm()
        plain = asyncio.run(llm.chat(QUESTION))
        streamed = asyncio.run(_streamed(llm, QUESTION))
    assert plain.text.split() == ["word"] * 6
    assert streamed.text.split() == ["word"] * 6
    bodies = [r.json for r in server.model_requests]
    assert [b.get("max_tokens") for b in bodies] == [6, 6]
    assert all("max_completion_tokens" not in b for b in bodies)
    assert server.quirk_hits["endless_reply"] == 2


def test_no_cap_is_sent_unless_asked() -> None:
    with OpenAIServer() as server:
        asyncio.run(_llm(server).chat(QUESTION))
    body = server.model_requests[0].json
    assert "max_tokens" not in body and "max_completion_tokens" not in body


def test_openai_api_gets_max_completion_tokens_and_anthropic_keeps_its_default() -> None:
    openai_llm = infer_model("openai:gpt-4o-mini", api_key="sk-test-1234", max_tokens=9)
    assert isinstance(openai_llm, OpenAILLM)
    assert openai_llm._request(QUESTION, None)["max_completion_tokens"] == 9
    pytest.importorskip("anthropic")
    capped = infer_model("anthropic", api_key="sk-ant-test", max_tokens=9)
    default = infer_model("anthropic", api_key="sk-ant-test", max_tokens=None)
    assert capped._request(QUESTION, None)["max_tokens"] == 9  # type: ignore[attr-defined]
    assert default._request(QUESTION, None)["max_tokens"] == 4096  # type: ignore[attr-defined]
