"""Spans of the OpenTelemetry GenAI semantic conventions as model and tool calls.

`gen_ai.operation.name` says what a span is: `chat` (also `text_completion`,
`generate_content`) a model call, `execute_tool` a tool call, `invoke_agent` an agent run.
A model call's messages are `gen_ai.input.messages` / `gen_ai.output.messages` (with
`gen_ai.system_instructions`), or, in the older conventions, one event per message
(`gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`,
`gen_ai.tool.message`, `gen_ai.choice`), as span events or as pydantic-ai's `events` attribute.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agent_core.llms.base import ChatMessage, Usage
from agent_core.recordings.importers._messages import Reading, text_of
from agent_core.recordings.importers._span import Span
from agent_core.recordings.importers.recorded import RecordedModelCall, RecordedToolCall

__all__ = ["answer", "call_of"]

_MODEL_OPERATIONS = ("chat", "text_completion", "generate_content")
_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def call_of(span: Span, reading: Reading) -> RecordedModelCall | RecordedToolCall | None:
    """The model or tool call `span` records, or None for any other span."""
    attrs = span.attributes
    operation = attrs.get("gen_ai.operation.name")
    if operation is None and "gen_ai.system" in attrs and "gen_ai.tool.name" not in attrs:
        operation = "chat"  # Before operation names, a span with a system was a model call.
    if operation in _MODEL_OPERATIONS:
        return _model_call(span, reading)
    if operation == "execute_tool" or (operation is None and "gen_ai.tool.name" in attrs):
        return _tool_call(span, reading)
    return None


def answer(roots: list[Span]) -> str | None:
    """The agent run's final output, when its span recorded one."""
    for span in roots:
        for key in ("final_result", "gen_ai.agent.output", "output.value"):
            if key in span.attributes:
                return text_of(span.attributes[key])
    return None


def _model_call(span: Span, reading: Reading) -> RecordedModelCall:
    attrs = span.attributes
    messages = reading.messages(attrs.get("gen_ai.input.messages"), span=span.span_id)
    instructions = reading.json(attrs.get("gen_ai.system_instructions"), span=span.span_id)
    if isinstance(instructions, list):
        messages = [*reading.message({"role": "system", "parts": instructions}), *messages]
    elif instructions is not None:
        messages = [ChatMessage(role="system", content=text_of(instructions)), *messages]
    replies = reading.messages(attrs.get("gen_ai.output.messages"), span=span.span_id)
    if not messages and not replies:
        messages, replies = _from_events(span, reading)
    reply = next((m for m in replies if m.role == "assistant"), ChatMessage(role="assistant"))
    return RecordedModelCall(
        span=span.span_id,
        name=span.name or None,
        messages=messages,
        reply=reply,
        usage=_usage(attrs),
        model=str(attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or ""),
        started_at=_time(span.start_ns),
        latency_ms=span.latency_ms,
        error=span.error,
    )


def _from_events(span: Span, reading: Reading) -> tuple[list[ChatMessage], list[ChatMessage]]:
    """The older conventions' messages: one event per message, the reply a `gen_ai.choice`."""
    events = list(span.events)
    recorded = reading.json(span.attributes.get("events"), span=span.span_id, field="events")
    if isinstance(recorded, list):  # pydantic-ai's event_mode="attributes".
        events += [(str(e.get("event.name", "")), e) for e in recorded if isinstance(e, dict)]
    sent: list[ChatMessage] = []
    replies: list[ChatMessage] = []
    for name, body in events:
        if name == "gen_ai.choice":
            message = reading.json(body.get("message"), span=span.span_id) or body
            replies += reading.message({"role": "assistant", **_dict(message)}, span=span.span_id)
        elif name in _EVENT_ROLES:
            fields = {**body, "role": _EVENT_ROLES[name]}
            fields["tool_calls"] = _dict_list(reading.json(body.get("tool_calls")))
            sent += reading.message(fields, span=span.span_id)
    return sent, replies


def _tool_call(span: Span, reading: Reading) -> RecordedToolCall:
    attrs = span.attributes
    result = attrs.get("gen_ai.tool.call.result", attrs.get("tool_response"))
    if span.error is not None and result is None:
        result = _exception(span) or span.error
    return RecordedToolCall(
        span=span.span_id,
        name=span.name or None,
        tool=str(attrs.get("gen_ai.tool.name") or span.name or "?"),
        call_id=str(attrs.get("gen_ai.tool.call.id") or ""),
        args=reading.args(
            attrs.get("gen_ai.tool.call.arguments", attrs.get("tool_arguments")),
            span=span.span_id,
        ),
        result=text_of(result),
        is_error=span.error is not None,
        started_at=_time(span.start_ns),
        latency_ms=span.latency_ms,
    )


def _exception(span: Span) -> str:
    for name, body in span.events:
        if name == "exception":
            kind = body.get("exception.type", "")
            return f"{kind}: {body.get('exception.message', '')}".strip(": ")
    return ""


def _usage(attrs: dict[str, Any]) -> Usage:
    def tokens(*keys: str) -> int:
        for key in keys:
            if isinstance(attrs.get(key), int):
                return attrs[key]
        return 0

    cost = attrs.get("operation.cost", attrs.get("gen_ai.usage.cost"))
    return Usage(
        prompt_tokens=tokens("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        completion_tokens=tokens("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
    )


def _time(ns: int) -> datetime | None:
    return datetime.fromtimestamp(ns / 1e9, UTC) if ns > 0 else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"content": value}


def _dict_list(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
