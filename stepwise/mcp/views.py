"""Tasks, steps and messages as compact text: what each tool answers a coding agent.

A coding agent reads every answer into its context, so each view is plain lines, one step a
line or a few, long values cut at `max_chars` with the count of what was left out (a
`show_step` call gives a step whole). Ids are shown in full: they are what the next call
takes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from agent_core.llms.base import ChatMessage
from agent_core.runtime.breakpoints import RunUntilResult
from agent_core.store.base import TaskSummary
from agent_core.types import StepStatus, TaskState, TaskStep, TaskStepOutput, ToolOutput

__all__ = [
    "DEFAULT_MAX_CHARS",
    "clip",
    "messages_text",
    "run_until_text",
    "step_line",
    "step_text",
    "task_list_text",
    "task_text",
    "value_text",
]

DEFAULT_MAX_CHARS = 300
"""Longest value shown in a task view before it is cut."""


def value_text(value: Any) -> str:
    """A step's input or output as one string: text as it is, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def clip(text: str, max_chars: int | None) -> str:
    """`text` on one line, cut at `max_chars` with how much was left out (None: whole)."""
    flat = " ".join(text.split()) if max_chars is not None else text
    if max_chars is None or len(flat) <= max_chars:
        return flat
    return f"{flat[:max_chars]}… (+{len(flat) - max_chars} chars)"


def _call_text(call: ToolOutput, max_chars: int | None) -> str:
    args = json.dumps(call.args, ensure_ascii=False, default=str)
    if call.rejected:
        return (
            f"{call.tool_name}({clip(args, max_chars)}) rejected: {clip(call.content, max_chars)}"
        )
    failed = " failed" if call.is_error else ""
    return f"{call.tool_name}({clip(args, max_chars)}){failed} -> {clip(call.content, max_chars)}"


def _label(step: TaskStep) -> str:
    number = f"#{step.number}" if step.number is not None else "next"
    name = f" {step.name}" if step.name else ""
    return f"{number} {step.kind.value}{name}"


def _status(step: TaskStep) -> str:
    if step.needs_approval:
        return "awaiting approval"
    if step.awaits_answer:
        return "asks a person: give the answer as its input"
    if step.kind.value == "tool" and step.status is StepStatus.UPCOMING:
        return "tool call held before it runs"
    return step.status.value


def step_line(
    step: TaskStep, output: TaskStepOutput | None, *, max_chars: int | None = DEFAULT_MAX_CHARS
) -> str:
    """One step in a few lines: number, kind, name, id, input, output, tool calls, error."""
    head = f"{_label(step)} [{_status(step)}] step_id={step.step_id}"
    lines = [head]
    if step.edited:
        lines.append(f"    proposed: {clip(value_text(step.proposed_input), max_chars)}")
    lines.append(f"    input: {clip(value_text(step.input), max_chars) or '(none)'}")
    if output is not None:
        if output.output not in (None, ""):
            lines.append(f"    output: {clip(value_text(output.output), max_chars)}")
        lines.extend(f"    call: {_call_text(call, max_chars)}" for call in output.tool_calls)
        if output.is_last:
            lines.append("    (last step: the task's answer)")
    if step.rejection:
        lines.append(f"    rejected: {clip(step.rejection, max_chars)}")
    error = step.error or (output.error if output is not None else None)
    if error:
        code = f" [{step.error_code}]" if step.error_code else ""
        lines.append(f"    error{code}: {clip(error, max_chars)}")
    return "\n".join(lines)


def messages_text(messages: Iterable[ChatMessage], *, max_chars: int | None) -> str:
    """Messages one a line or block: `[role] text`, with the tool calls they carry."""
    lines = []
    for message in messages:
        text = clip(message.content, max_chars)
        calls = "".join(
            f" call {call.name}({clip(json.dumps(call.args, default=str), max_chars)})"
            for call in message.tool_calls
        )
        lines.append(f"  [{message.role}] {text}{calls}")
    return "\n".join(lines) or "  (none)"


def task_text(
    state: TaskState,
    *,
    upcoming_preview: list[ChatMessage] | None,
    max_chars: int | None = DEFAULT_MAX_CHARS,
) -> str:
    """The task: status, its completed steps, the upcoming ones, what the model sees next."""
    task = state.task
    spec = task.spec or {}
    model = f"{spec.get('provider', '?')}{':' + spec['model'] if spec.get('model') else ''}"
    agent = f"{spec.get('agent') or spec.get('name') or '?'} on {model}"
    imported = ", imported (read only: fork it to go on)" if task.imported else ""
    lines = [
        f"task {task.task_id} [{task.status.value}{imported}] version {state.version}, "
        f"agent {agent}",
        f"input: {clip(value_text(task.input), max_chars)}",
    ]
    if task.forked_from is not None:
        point = task.forked_from
        lines.append(f"forked from task {point.task_id} after step #{point.number}")
    lines.append(f"completed steps ({len(state.completed)}):")
    for step_id in state.completed:
        step = state.steps[step_id]
        lines.append(step_line(step, state.outputs.get(step_id), max_chars=max_chars))
    failed = [s for s in state.steps.values() if s.status is StepStatus.FAILED]
    lines.append(f"upcoming steps ({len(state.queue)}):")
    for step in state.step_queue:
        lines.append(step_line(step, None, max_chars=max_chars))
    if not state.queue:
        lines.append("  (none: " + _why_none(state, failed) + ")")
    if upcoming_preview:
        lines.append(f"the model sees next ({len(upcoming_preview)} messages):")
        lines.append(messages_text(upcoming_preview, max_chars=max_chars))
    elif upcoming_preview is not None:
        lines.append("the next step calls no model (a tool call or a person's step)")
    return "\n".join(lines)


def _why_none(state: TaskState, failed: list[TaskStep]) -> str:
    if failed:
        return f"a step failed: {failed[-1].error or 'see it with show_step'}"
    last = state.last_output
    if last is not None and last.is_last:
        return "the task reached its answer"
    return f"the task is {state.task.status.value}"


def step_text(
    step: TaskStep, output: TaskStepOutput | None, messages_sent: list[ChatMessage]
) -> str:
    """One step whole: every field uncut, and the exact messages its model call was sent."""
    lines = [step_line(step, output, max_chars=None)]
    if output is not None:
        usage = output.usage
        cost = f", ${usage.cost_usd:.4f}" if usage.cost_usd is not None else ""
        lines.append(f"    tokens: {usage.total_tokens}{cost}, {output.latency_ms:.0f} ms")
        if output.thought:
            lines.append(f"    thought: {output.thought}")
    lines.append(f"messages sent to the model ({len(messages_sent)}):")
    lines.append(messages_text(messages_sent, max_chars=None))
    return "\n".join(lines)


def task_list_text(summaries: list[TaskSummary]) -> str:
    """One task a line, newest first: id, status, steps done and upcoming, input."""
    if not summaries:
        return "no tasks yet: create one with create_task"
    lines = []
    for summary in summaries:
        imported = " imported" if summary.imported else ""
        lines.append(
            f"{summary.task_id} [{summary.status.value}{imported}] "
            f"{summary.steps_completed} done, {summary.steps_upcoming} upcoming: "
            f"{clip(summary.input, 100)}"
        )
    return "\n".join(lines)


def run_until_text(result: RunUntilResult) -> str:
    """Why a run stopped and how many steps it ran, in one line."""
    detail = f": {result.detail}" if result.detail else ""
    return f"ran {len(result.outputs)} step(s); stopped ({result.reason}){detail}"
