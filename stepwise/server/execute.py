"""`POST /v1/agent/execute`: one stateless agent inference step over HTTP.

The request is `agent_core.execute.ExecuteRequest` plus the model to use and whether to
stream. Keys and server addresses come from the server's environment only.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_core.errors import AgentCoreError
from agent_core.execute import (
    AgentMessage,
    ExecuteDelta,
    ExecuteRequest,
    ExecuteResult,
    check_request,
    execute,
    execute_stream,
)
from agent_core.llms.base import Usage
from agent_core.llms.catalog import PROVIDERS
from stepwise.http.errors import error_body
from stepwise.server._model_errors import stateless_error
from stepwise.server.runtime import ModelUsed, Runtime
from stepwise.server.settings import ServedProvider

__all__ = ["ExecuteAgentRequest", "ExecuteAgentResponse", "ModelChoice", "router"]

router = APIRouter(tags=["execute agent"])

_SERVER_VARIABLES = [
    name
    for entry in PROVIDERS.values()
    for name in (entry.key_env, entry.base_url_env)
    if name is not None
]
_KEYS_ON_THE_SERVER = (
    f"keys and server addresses are configured on the server ({', '.join(_SERVER_VARIABLES)}), "
    "never sent in a request"
)


class ModelChoice(BaseModel):
    """Which of the server's configured providers answers, and its model."""

    model_config = ConfigDict(extra="forbid")
    provider: ServedProvider = Field(
        description='"demo" is the scripted demo model; the others need a key on the server.'
    )
    name: str | None = Field(
        default=None, max_length=200, description="The provider's model name; default: its usual."
    )

    @model_validator(mode="before")
    @classmethod
    def _no_secrets(cls, data: Any) -> Any:
        if isinstance(data, dict) and {"api_key", "key", "base_url", "url"} & set(data):
            raise ValueError(_KEYS_ON_THE_SERVER)
        return data


class ExecuteAgentRequest(ExecuteRequest):
    """One inference step: the conversation, the tools, and the model."""

    model: ModelChoice | None = Field(
        default=None, description="Default: the server's (the scripted demo when none is set)."
    )
    stream: bool = Field(
        default=False,
        description="Answer with server-sent events: `delta` events with text, then one "
        "`message` event with the response (or an `error` event).",
    )


class ExecuteAgentResponse(BaseModel):
    """The agent's next message: an answer, or tool requests for the caller to run."""

    message: AgentMessage
    usage: Usage
    model: ModelUsed
    latency_ms: float = Field(description="Wall time of the step on the server, in ms.")


@router.post(
    "/v1/agent/execute",
    response_model=ExecuteAgentResponse,
    summary="Run one stateless agent inference step",
    description="Send the conversation and the tools; get the agent's next message: a final "
    "answer (`content`) or `tool_requests` to run and answer with `tool` messages. Nothing "
    "is stored: the client keeps the history. With `stream: true`, server-sent events.",
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "The agent's message."},
        413: {"description": "The conversation is too long for the model: condense it."},
        422: {"description": "The conversation or tools cannot be read."},
        503: {"description": "The provider is not configured on this server."},
    },
)
async def execute_agent(body: ExecuteAgentRequest, runtime: Runtime) -> Any:
    """One step; the route's description says what it does."""
    max_messages = runtime.settings.max_messages
    check_request(body, max_messages=max_messages)  # A 4xx before any stream begins.
    choice = body.model or runtime.settings.default_model
    llm, used = runtime.execute_model(choice.provider, choice.name)
    protocol = "react" if used.scripted else "native"
    if body.stream:
        events = _events(body, llm, used, max_messages=max_messages, default_protocol=protocol)
        return StreamingResponse(events, media_type="text/event-stream")
    try:
        result = await execute(body, llm, max_messages=max_messages, default_protocol=protocol)
    except AgentCoreError as exc:
        raise stateless_error(exc, provider=used.provider, model=used.name) from None
    return _response(result, used)


def _response(result: ExecuteResult, used: ModelUsed) -> ExecuteAgentResponse:
    return ExecuteAgentResponse(
        message=result.message, usage=result.usage, model=used, latency_ms=result.latency_ms
    )


async def _events(
    body: ExecuteAgentRequest, llm: Any, used: ModelUsed, **options: Any
) -> AsyncIterator[bytes]:
    try:
        async for item in execute_stream(body, llm, **options):
            if isinstance(item, ExecuteDelta):
                yield _sse("delta", {"delta": item.delta})
            else:
                yield _sse("message", _response(item, used).model_dump(mode="json"))
    except AgentCoreError as exc:
        error = stateless_error(exc, provider=used.provider, model=used.name)
        yield _sse("error", error_body(error.code, error.message, error.hint, **error.extra))


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
