"""Spans of the OpenInference conventions (Phoenix and its instrumentors) as model and tool calls.

`openinference.span.kind` says what a span is: `LLM` a model call, `TOOL` a tool call, `AGENT`
and `CHAIN` structure (the root one holds the run's input and output). A model call's
messages are flattened into attributes (`llm.input_messages.0.message.role`, ...), unflattened
here; when an instrumentor recorded only the request and response bodies (`input.value`,
`output.value`), the messages are read from those.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agent_core.llms.base import ChatMessage, Usage
from agent_core.recordings.importers._messages import Reading, text_of
from agent_core.recordings.importers._span import Span
from agent_core.recordings.importers.recorded import RecordedModelCall, RecordedToolCall

__all__ = ["answer", "call_of", "question", "unflatten"]

_MAX_KEY_PARTS = 12
_QUESTION_KEYS = ("input", "question", "query", "user_prompt", "prompt", "task", "message")


def call_of(span: Span, reading: Reading) -> RecordedModelCall | RecordedToolCall | None:
    """The model or tool call `span` records, or None for any other span."""
    kind = str(span.attributes.get("openinference.span.kind", "")).upper()
    if kind == "LLM":
        return _model_call(span, reading)
    if kind == "TOOL":
        return _tool_call(span, reading)
    return None


def question(roots: list[Span], reading: Reading) -> str:
    """The run's input: the root span's `input.value` (its user text when it is JSON)."""
    for span in roots:
        value = span.attributes.get("input.value")
        if value is None or span.attributes.get("openinference.span.kind") == "LLM":
            continue
        parsed = reading.json(value, span=span.span_id, field="input.value")
        if isinstance(parsed, dict):
            users = [m for m in reading.messages(parsed.get("messages")) if m.role == "user"]
            if users:
                return users[-1].content
            parsed = next((parsed[k] for k in _QUESTION_KEYS if k in parsed), parsed)
        return text_of(parsed)
    return ""


def answer(roots: list[Span]) -> str | None:
    """The root span's `output.value`, when it is not a model call's."""
    for span in roots:
        if (
            span.attributes.get("openinference.span.kind") != "LLM"
            and "output.value" in span.attributes
        ):
            return text_of(span.attributes["output.value"])
    return None


def unflatten(attrs: dict[str, Any], prefix: str) -> list[Any]:
    """`prefix.0.message.role = ...` attributes as `[{"message": {"role": ...}}]`."""
    tree: dict[str, Any] = {}
    start = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(start):
            continue
        *path, last = key[len(start) :].split(".")
        if len(path) > _MAX_KEY_PARTS:  # No convention nests so deep: a bound on recursion.
            continue
        node = tree
        for part in path:
            child = node.get(part)
            node = node[part] = child if isinstance(child, dict) else {}
        node[last] = value
    listed = _listed(tree)
    return listed if isinstance(listed, list) else []


def _listed(node: Any) -> Any:
    """Dicts keyed by indexes as lists, in index order (iteratively deep only as the keys are)."""
    if not isinstance(node, dict):
        return node
    items = {key: _listed(value) for key, value in node.items()}
    if items and all(key.isdigit() for key in items):
        return [items[key] for key in sorted(items, key=int)]
    return items


def _model_call(span: Span, reading: Reading) -> RecordedModelCall:
    attrs = span.attributes
    messages = reading.messages(unflatten(attrs, "llm.input_messages"), span=span.span_id)
    replies = reading.messages(unflatten(attrs, "llm.output_messages"), span=span.span_id)
    if not messages:
        body = reading.json(attrs.get("input.value"), span=span.span_id, field="input.value")
        messages = reading.messages(body, span=span.span_id) if isinstance(body, dict) else []
    if not replies:
        replies = _replies_of_body(attrs, span, reading)
    reply = next((m for m in replies if m.role == "assistant"), ChatMessage(role="assistant"))
    return RecordedModelCall(
        span=span.span_id,
        name=span.name or None,
        messages=messages,
        reply=reply,
        usage=_usage(attrs),
        model=str(attrs.get("llm.model_name") or ""),
        started_at=_time(span.start_ns),
        latency_ms=span.latency_ms,
        error=span.error,
    )


def _replies_of_body(attrs: dict[str, Any], span: Span, reading: Reading) -> list[ChatMessage]:
    """The reply in an OpenAI-shaped response body (`output.value`), or its text."""
    body = reading.json(attrs.get("output.value"), span=span.span_id, field="output.value")
    if isinstance(body, dict) and isinstance(body.get("choices"), list) and body["choices"]:
        choice = body["choices"][0]
        if isinstance(choice, dict):
            return reading.message({"role": "assistant", **(choice.get("message") or {})})
    if body is None:
        return []
    return [ChatMessage(role="assistant", content=text_of(body))]


def _tool_call(span: Span, reading: Reading) -> RecordedToolCall:
    attrs = span.attributes
    result = attrs.get("output.value")
    if span.error is not None and result is None:
        result = span.error
    return RecordedToolCall(
        span=span.span_id,
        name=span.name or None,
        tool=str(attrs.get("tool.name") or span.name or "?"),
        call_id=str(attrs.get("tool_call.id") or attrs.get("tool.id") or ""),
        args=reading.args(attrs.get("input.value"), span=span.span_id),
        result=text_of(result),
        is_error=span.error is not None,
        started_at=_time(span.start_ns),
        latency_ms=span.latency_ms,
    )


def _usage(attrs: dict[str, Any]) -> Usage:
    prompt = attrs.get("llm.token_count.prompt")
    completion = attrs.get("llm.token_count.completion")
    cost = attrs.get("llm.cost.total")
    return Usage(
        prompt_tokens=prompt if isinstance(prompt, int) else 0,
        completion_tokens=completion if isinstance(completion, int) else 0,
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
    )


def _time(ns: int) -> datetime | None:
    return datetime.fromtimestamp(ns / 1e9, UTC) if ns > 0 else None
