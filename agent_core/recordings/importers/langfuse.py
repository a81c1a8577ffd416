"""Langfuse traces as its API returns them: a trace with its observations.

`GET /api/public/traces/{traceId}` gives `{"id", "name", "input", "output", "observations":
[...]}`; the list route's `{"data": [...]}` gives several. An observation's `type` says what it
is: `GENERATION` a model call (`input` the messages, `output` the reply, `usage` /
`usageDetails`, `calculatedTotalCost` / `costDetails`), `TOOL` a tool call (`input` the
arguments, `output` the result); `SPAN`, `AGENT`, `CHAIN` and the rest are structure, or notes
when they hold no call. `parentObservationId` and `startTime` order them.
"""

from __future__ import annotations

from typing import Any

from agent_core.llms.base import ChatMessage, Usage
from agent_core.recordings.importers._arrange import SpanNode, arrange
from agent_core.recordings.importers._messages import Reading, text_of
from agent_core.recordings.importers._reading import Source, mapping
from agent_core.recordings.importers._times import latency_ms, parse_time, seconds
from agent_core.recordings.importers.recorded import (
    RecordedModelCall,
    RecordedRun,
    RecordedToolCall,
)
from agent_core.types import ImportSource

__all__ = ["is_langfuse", "read_langfuse"]

_MODEL_TYPES = ("GENERATION",)
_TOOL_TYPES = ("TOOL",)


def is_langfuse(document: Any) -> bool:
    """Whether `document` is a Langfuse trace, or a list (or `data` page) of them."""
    traces = _traces(document)
    return bool(traces) and all(isinstance(t.get("observations"), list) for t in traces)


def read_langfuse(document: Any, source: Source, reading: Reading) -> list[RecordedRun]:
    """Every trace in the export with a model call, as a recorded run."""
    runs = []
    for trace in _traces(document):
        nodes = [
            _node(obs, order, reading)
            for order, obs in enumerate(trace["observations"])
            if isinstance(obs, dict)
        ]
        if not any(isinstance(node.call, RecordedModelCall) for node in nodes):
            continue
        question = trace.get("input")
        runs.append(
            RecordedRun(
                question=_question(question, reading),
                answer=text_of(trace.get("output")) if trace.get("output") is not None else None,
                events=arrange(nodes, reading),
                source=ImportSource(
                    format="langfuse", file=source.name, trace_id=str(trace.get("id") or "")
                ),
            )
        )
    return runs


def _traces(document: Any) -> list[dict[str, Any]]:
    if isinstance(document, dict) and isinstance(document.get("data"), list):
        document = document["data"]
    if isinstance(document, dict):
        document = [document]
    if not isinstance(document, list):
        return []
    return [t for t in document if isinstance(t, dict)]


def _question(value: Any, reading: Reading) -> str:
    if isinstance(value, dict | list):
        users = [m for m in reading.messages(value) if m.role == "user"]
        if users:
            return users[-1].content
        if isinstance(value, dict):
            for key in ("input", "question", "query", "prompt"):
                if key in value:
                    return text_of(value[key])
    return text_of(value)


def _node(obs: dict[str, Any], order: int, reading: Reading) -> SpanNode:
    kind = str(obs.get("type") or "SPAN").upper()
    start = parse_time(obs.get("startTime"))
    call: RecordedModelCall | RecordedToolCall | None = None
    if kind in _MODEL_TYPES:
        call = _model_call(obs, reading)
    elif kind in _TOOL_TYPES:
        call = _tool_call(obs, reading)
    return SpanNode(
        id=str(obs.get("id") or f"#{order}"),
        parent=str(obs.get("parentObservationId") or ""),
        start=seconds(start),
        order=order,
        label=f"{obs.get('name') or 'observation'} ({kind})",
        call=call,
    )


def _model_call(obs: dict[str, Any], reading: Reading) -> RecordedModelCall:
    span = str(obs.get("id") or "")
    start, end = parse_time(obs.get("startTime")), parse_time(obs.get("endTime"))
    output = obs.get("output")
    replies = reading.message(
        {"role": "assistant", **output}
        if isinstance(output, dict)
        else {
            "role": "assistant",
            "content": output,
        },
        span=span,
    )
    failed = obs.get("level") == "ERROR"
    return RecordedModelCall(
        span=span,
        name=obs.get("name") or None,
        messages=reading.messages(obs.get("input"), span=span),
        reply=replies[-1] if replies else ChatMessage(role="assistant"),
        usage=_usage(obs),
        model=str(obs.get("model") or ""),
        started_at=start,
        latency_ms=latency_ms(start, end),
        error=str(obs.get("statusMessage") or "error") if failed else None,
    )


def _tool_call(obs: dict[str, Any], reading: Reading) -> RecordedToolCall:
    span = str(obs.get("id") or "")
    start, end = parse_time(obs.get("startTime")), parse_time(obs.get("endTime"))
    failed = obs.get("level") == "ERROR"
    result = obs.get("output")
    if failed and result is None:
        result = obs.get("statusMessage") or "error"
    metadata = mapping(obs.get("metadata"))
    return RecordedToolCall(
        span=span,
        name=obs.get("name") or None,
        tool=str(obs.get("name") or "?"),
        call_id=str(metadata.get("tool_call_id") or ""),
        args=reading.args(obs.get("input"), span=span),
        result=text_of(result),
        is_error=failed,
        started_at=start,
        latency_ms=latency_ms(start, end),
    )


def _usage(obs: dict[str, Any]) -> Usage:
    details = obs.get("usageDetails") or obs.get("usage") or {}
    details = details if isinstance(details, dict) else {}

    def count(*keys: str) -> int:
        for key in keys:
            if isinstance(details.get(key), int):
                return details[key]
        return 0

    costs = mapping(obs.get("costDetails"))
    cost = obs.get("calculatedTotalCost", costs.get("total"))
    return Usage(
        prompt_tokens=count("input", "promptTokens", "prompt_tokens"),
        completion_tokens=count("output", "completionTokens", "completion_tokens"),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
    )
