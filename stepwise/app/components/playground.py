"""The Playground's state and the pieces that do not draw: the conversation, the tools, curl.

The Playground exercises the stateless Execute Agent step by hand (`agent_core.execute`):
the page keeps the conversation, as a client of the HTTP API would.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

import streamlit as st
from pydantic import TypeAdapter, ValidationError

from agent_core.execute import (
    AgentMessage,
    ExecuteRequest,
    ExecuteResult,
    ToolDefinition,
    ToolMessage,
)
from agent_core.tools.arithmetic import arithmetic_tools
from agent_core.tools.base import BaseTool

__all__ = [
    "SERVER_URL",
    "append",
    "build_request",
    "builtin_tools",
    "clear",
    "conversation",
    "curl_command",
    "last_result",
    "open_requests",
    "parse_tools",
    "set_last_result",
    "tool_presets",
]

SERVER_URL = "http://127.0.0.1:8000"
_CONVERSATION = "playground-conversation"
_RESULT = "playground-result"
_TOOLS_LIST = TypeAdapter(list[ToolDefinition])


def conversation() -> list[dict[str, Any]]:
    """The messages so far, as the API's JSON (oldest first)."""
    return st.session_state.setdefault(_CONVERSATION, [])


def append(*messages: dict[str, Any]) -> None:
    """Add messages to the conversation."""
    st.session_state[_CONVERSATION] = [*conversation(), *messages]


def clear() -> None:
    """Start a new conversation."""
    st.session_state[_CONVERSATION] = []
    st.session_state.pop(_RESULT, None)


def last_result() -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The last request sent and the response it got (as JSON), if any."""
    return st.session_state.get(_RESULT)


def set_last_result(request: dict[str, Any], response: dict[str, Any]) -> None:
    """Remember the last exchange, to show it."""
    st.session_state[_RESULT] = (request, response)


def builtin_tools() -> dict[str, BaseTool]:
    """The tools the Playground can run for the user: the built-in arithmetic."""
    return {tool.name: tool for tool in arithmetic_tools()}


def tool_presets() -> str:
    """The built-in tools' definitions, as the JSON the tools editor holds."""
    definitions = [
        {"name": spec.name, "description": spec.description, "parameters": spec.parameters}
        for spec in (tool.metadata.to_spec() for tool in builtin_tools().values())
    ]
    return json.dumps(definitions, indent=2)


def parse_tools(text: str) -> tuple[list[ToolDefinition], str]:
    """The tools in the editor, or why they cannot be read (in words for the page)."""
    if not text.strip():
        return [], ""
    try:
        return _TOOLS_LIST.validate_json(text), ""
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return [], f"The tools are not valid: {where}: {first['msg']}."


def open_requests(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last agent message's tool requests that no tool message answers yet."""
    answered = {m["tool_request_id"] for m in messages if m["role"] == "tool"}
    for message in reversed(messages):
        if message["role"] == "agent":
            return [r for r in message.get("tool_requests") or [] if r["id"] not in answered]
    return []


def build_request(
    tools: list[ToolDefinition], instructions: str, model: dict[str, Any] | None
) -> dict[str, Any]:
    """The Execute Agent request for the conversation, as the HTTP API takes it."""
    request: dict[str, Any] = {
        "messages": conversation(),
        "tools": [t.model_dump() for t in tools],
    }
    if instructions.strip():
        request["instructions"] = instructions
    if model is not None:
        request["model"] = model
    return request


def to_execute_request(request: dict[str, Any]) -> ExecuteRequest:
    """The in-process request (the HTTP-only `model` left out)."""
    return ExecuteRequest.model_validate({k: v for k, v in request.items() if k != "model"})


def response_json(result: ExecuteResult, model: dict[str, Any]) -> dict[str, Any]:
    """The response as `POST /v1/agent/execute` would give it."""
    return {
        "message": result.message.model_dump(mode="json"),
        "usage": result.usage.model_dump(mode="json"),
        "model": model,
        "latency_ms": result.latency_ms,
    }


def agent_turn(message: AgentMessage) -> dict[str, Any]:
    """The agent's message as a conversation entry."""
    return message.model_dump(mode="json", exclude_none=True)


def tool_turn(request_id: str, content: str) -> dict[str, Any]:
    """A tool's output as a conversation entry."""
    return ToolMessage(tool_request_id=request_id, content=content).model_dump(mode="json")


def curl_command(request: dict[str, Any], *, url: str = SERVER_URL) -> str:
    """The same request against `stepwise serve`, as a shell command."""
    body = json.dumps(request, ensure_ascii=False)
    return (
        f"curl -s {url}/v1/agent/execute \\\n"
        "  -H 'Content-Type: application/json' \\\n"
        f"  -d {shlex.quote(body)}"
    )
