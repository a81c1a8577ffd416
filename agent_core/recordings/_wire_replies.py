"""A recorded model reply as the provider's HTTP API would send it.

A framework's agent calls the model through its provider's SDK (OpenAI's chat completions or
Responses API, Anthropic's messages API), so a replay answers at that SDK's HTTP transport with
the recorded reply in the provider's JSON: the framework parses it as it parses a live one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from agent_core.recordings.cases import ModelReply
from agent_core.recordings.errors import ReplayUnsupportedError

__all__ = ["api_of", "reply_body", "reply_events"]

_REPLY_ID = "replayed"


def api_of(path: str) -> str | None:
    """The model API a request path calls (`chat`, `responses`, `messages`), else None."""
    for suffix, api in (
        ("/chat/completions", "chat"),
        ("/responses", "responses"),
        ("/messages", "messages"),
    ):
        if path.rstrip("/").endswith(suffix):
            return api
    return None


def _call_id(index: int, given: str) -> str:
    return given or f"call_replayed_{index}"


def _chat(reply: ModelReply, model: str) -> dict[str, Any]:
    message = reply.message
    body: dict[str, Any] = {"role": "assistant", "content": message.content or None}
    if message.tool_calls:
        body["tool_calls"] = [
            {
                "id": _call_id(i, call.id),
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.args)},
            }
            for i, call in enumerate(message.tool_calls)
        ]
    return {
        "id": f"chatcmpl-{_REPLY_ID}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": body,
                "finish_reason": "tool_calls" if message.tool_calls else "stop",
            }
        ],
        "usage": _usage(reply, "prompt_tokens", "completion_tokens"),
    }


def _usage(reply: ModelReply, prompt: str, completion: str) -> dict[str, int]:
    used = reply.usage
    total = used.prompt_tokens + used.completion_tokens
    return {prompt: used.prompt_tokens, completion: used.completion_tokens, "total_tokens": total}


def _responses(reply: ModelReply, model: str) -> dict[str, Any]:
    message = reply.message
    output: list[dict[str, Any]] = []
    if message.content:
        text = {"type": "output_text", "text": message.content, "annotations": []}
        output.append(
            {
                "type": "message",
                "id": f"msg_{_REPLY_ID}",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        )
    for index, call in enumerate(message.tool_calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{_REPLY_ID}_{index}",
                "call_id": _call_id(index, call.id),
                "name": call.name,
                "arguments": json.dumps(call.args),
                "status": "completed",
            }
        )
    return {
        "id": f"resp_{_REPLY_ID}",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            **_usage(reply, "input_tokens", "output_tokens"),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _messages(reply: ModelReply, model: str) -> dict[str, Any]:
    message = reply.message
    content: list[dict[str, Any]] = []
    if message.content:
        content.append({"type": "text", "text": message.content})
    for index, call in enumerate(message.tool_calls):
        tool_id = call.id or f"toolu_replayed_{index}"
        content.append({"type": "tool_use", "id": tool_id, "name": call.name, "input": call.args})
    return {
        "id": f"msg_{_REPLY_ID}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if message.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.usage.prompt_tokens,
            "output_tokens": reply.usage.completion_tokens,
        },
    }


_ENCODERS = {"chat": _chat, "responses": _responses, "messages": _messages}


def reply_body(api: str, reply: ModelReply, model: str) -> dict[str, Any]:
    """The recorded reply as the JSON body `api` answers a non-streamed request with."""
    return _ENCODERS[api](reply, model)


def reply_events(api: str, reply: ModelReply, model: str) -> Iterator[bytes]:
    """The recorded reply as a streamed answer (Server-Sent Events), one chunk for the whole.

    Only chat completions streams are spoken: the Responses and messages APIs' event
    grammars are long, and the adapters ask them unstreamed unless a person watches tokens.
    """
    if api != "chat":
        raise ReplayUnsupportedError(
            f"a streamed {api} request cannot be answered from a recording yet: run the agent"
            " unstreamed in the replay",
            params={"reason": f"streamed {api}"},
        )
    whole = _chat(reply, model)
    choice = whole["choices"][0]
    delta = dict(choice["message"])
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(delta["tool_calls"])]
    chunk = {**whole, "object": "chat.completion.chunk"}
    chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": choice["finish_reason"]}]
    yield f"data: {json.dumps(chunk)}\n\n".encode()
    yield b"data: [DONE]\n\n"
