"""A recorded run as a task: read only, marked imported, with where it came from.

Each model call is a completed `llm` step holding the messages it was sent (`messages_sent`),
its reply, usage and latency; each tool call a completed `tool` step holding its arguments
and result. Notes join the step before them (the first step when none is). The conversation
grows as the model saw it, so each step's undo snapshot is the conversation before it: what a
fork continues from and what a case reads the model's replies from.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from agent_core._nesting import too_deep
from agent_core.llms.base import RAW_TOOL_ARGUMENTS, ChatMessage, Usage
from agent_core.memory import ChatMemoryBuffer, MemorySnapshot
from agent_core.recordings.importers.recorded import (
    RecordedModelCall,
    RecordedNote,
    RecordedRun,
    RecordedToolCall,
)
from agent_core.runtime.worker_state import dump_state
from agent_core.types import (
    StepKind,
    StepNote,
    StepSnapshot,
    StepStatus,
    Task,
    TaskState,
    TaskStatus,
    TaskStep,
    TaskStepOutput,
    ToolOutput,
    new_id,
    utcnow,
)

__all__ = ["task_state_of"]

_NO_QUESTION = "(the trace recorded no question)"


def task_state_of(run: RecordedRun) -> TaskState:
    """The read-only task of `run` (it holds at least one model call)."""
    task = Task(
        input=run.question or _first_question(run) or _NO_QUESTION,
        status=TaskStatus.COMPLETED,
        imported=True,
        imported_from=run.source,
    )
    state = TaskState(task=task, version=1)
    conversation: list[ChatMessage] = []
    before: list[tuple[str, list[ChatMessage]]] = []
    pending: list[StepNote] = []
    for event in run.events:
        if isinstance(event, RecordedNote):
            _add_note(state, pending, StepNote(code=event.code, message=_noted(event)))
            continue
        before.append((_add_step(state, event), conversation))
        conversation = _after(conversation, event)
        if pending:
            state.outputs[state.completed[-1]].notes.extend(pending)
            pending.clear()
    _finish(state, conversation, before, run.answer)
    return state


def _first_question(run: RecordedRun) -> str:
    for event in run.events:
        if isinstance(event, RecordedModelCall):
            users = [m.content for m in event.messages if m.role == "user"]
            return users[0] if users else ""
    return ""


def _noted(note: RecordedNote) -> str:
    return f"span {note.span}: {note.message}" if note.span else note.message


def _add_note(state: TaskState, pending: list[StepNote], note: StepNote) -> None:
    if state.completed:
        state.outputs[state.completed[-1]].notes.append(note)
    else:  # Before the first step: it joins that step.
        pending.append(note)


def _add_step(state: TaskState, event: RecordedModelCall | RecordedToolCall) -> str:
    """Append `event` as the next completed step; its id."""
    number = len(state.completed) + 1
    finished = (
        (event.started_at + timedelta(milliseconds=event.latency_ms))
        if (event.started_at)
        else None
    )
    step = TaskStep(
        task_id=state.task_id,
        step_id=new_id(),
        kind=StepKind.LLM if isinstance(event, RecordedModelCall) else StepKind.TOOL,
        name=event.name,
        status=StepStatus.COMPLETED,
        number=number,
        started_at=event.started_at,
        finished_at=finished,
        created_at=event.started_at or utcnow(),
    )
    if state.completed:
        state.steps[state.completed[-1]].link_step(step)
    if isinstance(event, RecordedModelCall):
        step.input = state.task.input if number == 1 else None
        output = _model_output(step, event)
        state.task.usage = _added(state.task.usage, event.usage)
    else:
        args = _storable(event.args)
        step.input = {"tool": event.tool, "args": args}
        output = _tool_output(step, event, args)
    state.steps[step.step_id] = step
    state.outputs[step.step_id] = output
    state.completed.append(step.step_id)
    return step.step_id


def _model_output(step: TaskStep, call: RecordedModelCall) -> TaskStepOutput:
    error = call.error
    return TaskStepOutput(
        output=call.reply.content,
        task_step=step,
        usage=call.usage,
        latency_ms=call.latency_ms,
        messages_sent=call.messages,
        error=error,
    )


def _tool_output(step: TaskStep, call: RecordedToolCall, args: dict[str, Any]) -> TaskStepOutput:
    result = ToolOutput(
        tool_name=call.tool,
        args=args,
        content=call.result,
        is_error=call.is_error,
        call_id=call.call_id,
    )
    return TaskStepOutput(
        output=call.result, task_step=step, tool_calls=[result], latency_ms=call.latency_ms
    )


def _storable(args: dict[str, Any]) -> dict[str, Any]:
    # A store reads back about 200 levels: deeper arguments are kept as a note of that.
    if too_deep(args):
        return {RAW_TOOL_ARGUMENTS: "(arguments nested too deep to keep)"}
    return args


def _after(
    conversation: list[ChatMessage], event: RecordedModelCall | RecordedToolCall
) -> list[ChatMessage]:
    """The conversation once `event` happened, as the model would see it next."""
    if isinstance(event, RecordedModelCall):
        sent = event.messages or conversation
        return [*sent, event.reply]
    if any(m.role == "tool" and m.tool_call_id == event.call_id for m in conversation if m):
        return conversation
    result = ChatMessage(
        role="tool", content=event.result, tool_call_id=event.call_id or None, name=event.tool
    )
    return [*conversation, result]


def _finish(
    state: TaskState,
    conversation: list[ChatMessage],
    before: list[tuple[str, list[ChatMessage]]],
    answer: str | None,
) -> None:
    """Set the memory, each step's snapshot, the last step and the task's answer."""
    state.task.memory = ChatMemoryBuffer(messages=conversation)
    for step_id, earlier in before:
        kept = None if conversation[: len(earlier)] == earlier else list(earlier)
        state.snapshots[step_id] = StepSnapshot(
            step_id=step_id,
            memory=MemorySnapshot(length=len(earlier), messages=kept),
            extra_state_json="{}",
        )
    last = state.outputs[state.completed[-1]]
    last.is_last = True
    if answer is not None and last.task_step.kind is StepKind.LLM and not last.output:
        last.output = answer
    state.set_extra_state_json(dump_state({}, task_id=state.task_id, step_id=""))


def _added(total: Usage, more: Usage) -> Usage:
    cost = None
    if total.cost_usd is not None or more.cost_usd is not None:
        cost = (total.cost_usd or 0.0) + (more.cost_usd or 0.0)
    return Usage(
        prompt_tokens=total.prompt_tokens + more.prompt_tokens,
        completion_tokens=total.completion_tokens + more.completion_tokens,
        cost_usd=cost,
    )
