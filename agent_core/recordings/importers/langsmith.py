"""LangSmith run trees as its API returns them: a root run with its `child_runs`.

A run's `run_type` says what it is: `llm` a model call (`inputs.messages`, LangChain's
serialised messages, one list per prompt; `outputs.generations` the reply;
`outputs.llm_output.token_usage`, or the run's own `prompt_tokens` / `completion_tokens` /
`total_cost`), `tool` a tool call (`inputs` the arguments, `outputs.output` the result, `error`);
`chain` (a LangGraph node, the graph itself), `retriever`, `prompt`, `parser` are structure, or
notes when they hold no call. A flat list of runs linked by `parent_run_id` (the query API's)
reads the same. Trees are walked without recursion.
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

__all__ = ["is_langsmith", "read_langsmith"]


def is_langsmith(document: Any) -> bool:
    """Whether `document` is a LangSmith run, or a list of runs."""
    runs = document if isinstance(document, list) else [document]
    return bool(runs) and all(isinstance(r, dict) and "run_type" in r for r in runs)


def read_langsmith(document: Any, source: Source, reading: Reading) -> list[RecordedRun]:
    """Every run tree in the export with a model call, as a recorded run."""
    runs = document if isinstance(document, list) else [document]
    flat = _flattened(runs)
    roots = _roots(flat)
    trees: dict[str, list[dict[str, Any]]] = {}
    for run, root in zip(flat, roots, strict=True):
        trees.setdefault(str(run.get("trace_id") or root), []).append(run)
    recorded = []
    for trace_id, members in trees.items():
        nodes = [_node(run, order, reading) for order, run in enumerate(members)]
        if not any(isinstance(node.call, RecordedModelCall) for node in nodes):
            continue
        root = next((r for r in members if not r.get("parent_run_id")), members[0])
        recorded.append(
            RecordedRun(
                question=_question(root.get("inputs"), reading),
                answer=_answer(root),
                events=arrange(nodes, reading),
                source=ImportSource(format="langsmith", file=source.name, trace_id=trace_id),
            )
        )
    return recorded


def _flattened(runs: list[Any]) -> list[dict[str, Any]]:
    """Every run of the trees, parents before children, with `parent_run_id` set."""
    flat: list[dict[str, Any]] = []
    stack: list[tuple[dict[str, Any], str]] = [
        (r, str(r.get("parent_run_id") or "")) for r in reversed(runs) if isinstance(r, dict)
    ]
    while stack:
        run, parent = stack.pop()
        run = {**run, "parent_run_id": run.get("parent_run_id") or parent or None}
        flat.append(run)
        children = run.pop("child_runs", None) or []
        stack.extend(
            (c, str(run.get("id") or "")) for c in reversed(children) if isinstance(c, dict)
        )
    return flat


def _roots(flat: list[dict[str, Any]]) -> list[str]:
    """Each run's root run id (the run's own when its parent is not in the file)."""
    by_id = {str(run.get("id") or ""): run for run in flat}
    root_of: dict[str, str] = {}
    found = []
    for run in flat:
        chain: list[str] = []
        current = str(run.get("id") or "")
        while current not in root_of and current not in chain:
            chain.append(current)
            parent = str((by_id.get(current) or {}).get("parent_run_id") or "")
            if parent not in by_id:
                break
            current = parent
        root = root_of.get(current, chain[-1])
        for run_id in chain:
            root_of[run_id] = root
        found.append(root)
    return found


def _question(inputs: Any, reading: Reading) -> str:
    if isinstance(inputs, dict):
        users = [m for m in reading.messages(inputs.get("messages")) if m.role == "user"]
        if users:
            return users[-1].content
        for key in ("input", "question", "query", "prompt"):
            if key in inputs:
                return text_of(inputs[key])
    return text_of(inputs)


def _answer(root: dict[str, Any]) -> str | None:
    outputs = root.get("outputs")
    if isinstance(outputs, dict):
        for key in ("output", "answer", "result"):
            if key in outputs:
                return text_of(outputs[key])
    return None


def _node(run: dict[str, Any], order: int, reading: Reading) -> SpanNode:
    kind = str(run.get("run_type") or "chain")
    call: RecordedModelCall | RecordedToolCall | None = None
    if kind == "llm":
        call = _model_call(run, reading)
    elif kind == "tool":
        call = _tool_call(run, reading)
    return SpanNode(
        id=str(run.get("id") or f"#{order}"),
        parent=str(run.get("parent_run_id") or ""),
        start=seconds(parse_time(run.get("start_time"))),
        order=order,
        label=f"{run.get('name') or 'run'} ({kind})",
        call=call,
    )


def _model_call(run: dict[str, Any], reading: Reading) -> RecordedModelCall:
    span = str(run.get("id") or "")
    start, end = parse_time(run.get("start_time")), parse_time(run.get("end_time"))
    inputs = mapping(run.get("inputs"))
    messages = reading.messages(inputs.get("messages"), span=span) or [
        ChatMessage(role="user", content=text_of(p)) for p in inputs.get("prompts") or []
    ]
    metadata = (
        ((run.get("extra") or {}).get("metadata") or {})
        if isinstance(run.get("extra"), dict)
        else {}
    )
    return RecordedModelCall(
        span=span,
        name=run.get("name") or None,
        messages=messages,
        reply=_reply(run.get("outputs"), span, reading),
        usage=_usage(run),
        model=str(metadata.get("ls_model_name") or "") if isinstance(metadata, dict) else "",
        started_at=start,
        latency_ms=latency_ms(start, end),
        error=str(run["error"]) if run.get("error") else None,
    )


def _reply(outputs: Any, span: str, reading: Reading) -> ChatMessage:
    """The first generation's message (or text), or an OpenAI-shaped message."""
    if isinstance(outputs, dict) and isinstance(outputs.get("generations"), list):
        generations = [g for batch in outputs["generations"] for g in _listed(batch)]
        if generations and isinstance(generations[0], dict):
            first = generations[0]
            found = reading.message(
                first.get("message") or {"type": "ai", "content": first.get("text")}, span=span
            )
            if found:
                return found[-1]
    if isinstance(outputs, dict) and ("content" in outputs or "tool_calls" in outputs):
        found = reading.message({"role": "assistant", **outputs}, span=span)
        if found:
            return found[-1]
    return ChatMessage(role="assistant", content=text_of(outputs) if outputs else "")


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _tool_call(run: dict[str, Any], reading: Reading) -> RecordedToolCall:
    span = str(run.get("id") or "")
    start, end = parse_time(run.get("start_time")), parse_time(run.get("end_time"))
    inputs = run.get("inputs")
    if isinstance(inputs, dict) and set(inputs) == {"input"}:
        inputs = inputs["input"]  # LangChain records a tool's input as {"input": <text>}.
    outputs = run.get("outputs")
    result = outputs.get("output", outputs) if isinstance(outputs, dict) else outputs
    call_id = ""
    if isinstance(result, dict) and isinstance(result.get("kwargs"), dict):  # A ToolMessage.
        call_id = str(result["kwargs"].get("tool_call_id") or "")
        result = result["kwargs"].get("content", result)
    failed = bool(run.get("error"))
    return RecordedToolCall(
        span=span,
        name=run.get("name") or None,
        tool=str(run.get("name") or "?"),
        call_id=call_id,
        args=reading.args(inputs, span=span),
        result=text_of(run["error"] if failed and result is None else result),
        is_error=failed,
        started_at=start,
        latency_ms=latency_ms(start, end),
    )


def _usage(run: dict[str, Any]) -> Usage:
    outputs = mapping(run.get("outputs"))
    llm_output = mapping(outputs.get("llm_output"))
    usage = mapping(llm_output.get("token_usage"))

    def count(top: str, key: str) -> int:
        value = run.get(top, usage.get(key))
        return value if isinstance(value, int) else 0

    cost = run.get("total_cost")
    try:
        cost_usd = float(cost) if cost is not None else None
    except (TypeError, ValueError):
        cost_usd = None
    return Usage(
        prompt_tokens=count("prompt_tokens", "prompt_tokens"),
        completion_tokens=count("completion_tokens", "completion_tokens"),
        cost_usd=cost_usd,
    )
