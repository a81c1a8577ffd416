"""A case from a stored task: its steps as the recording, its result as the expectations.

A task already is a recording: each completed step keeps the messages its model got
(`messages_sent`), its tool calls and the acts of a person (an edited input, a rejection, a
skip, feedback). The model's reply is what the step added to the task's memory: the memory
before each step is its undo snapshot, so the reply is the first assistant message between one
step's snapshot and the next.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from agent_core.errors import TaskNotFoundError
from agent_core.llms.base import ChatMessage
from agent_core.recordings.cases import (
    Case,
    CaseSource,
    CaseStep,
    HumanAct,
    ModelReply,
    ModelRequest,
    RecordedToolCall,
)
from agent_core.recordings.expectations import Expectations, ExpectedCall
from agent_core.recordings.requests import request_tools
from agent_core.types import (
    INTERRUPT_KEY,
    StepKind,
    StepStatus,
    TaskState,
    TaskStep,
    TaskStepOutput,
    short_id,
)

__all__ = ["TaskSource", "case_from_task", "default_expectations"]

_MACHINE_FIELDS = ("workspace",)
"""Spec fields that name this machine's folders: a replay sets its own."""


class TaskSource(Protocol):
    """A runner or a store: where a task and its steps' requests are read from."""

    def load_messages_sent(self, task_id: str, step_id: str) -> list[ChatMessage]:
        """The messages a step sent its model."""
        ...


def case_from_task(
    source: Any,
    task_id: str,
    *,
    name: str | None = None,
    expectations: Expectations | None = None,
) -> Case:
    """The case of task `task_id`: its completed steps in order, and what it is expected to do.

    Args:
        source: An `AgentRunner` or a `Store` holding the task.
        task_id: The task.
        name: The case's name (default: `task-` and the task id's last 8 digits).
        expectations: What a replay must do (default: `default_expectations` of the task).

    Raises:
        TaskNotFoundError: No such task.
    """
    state, sent = _read(source, task_id)
    replies = _replies(state)
    typed = (state.task.spec or {}).get("provider") == "human"
    steps = [
        _case_step(state.outputs[step_id], sent(step_id), replies.get(step_id), typed=typed)
        for step_id in state.completed
    ]
    agent = {k: v for k, v in (state.task.spec or {}).items() if k not in _MACHINE_FIELDS}
    case = Case(
        name=name or f"task-{short_id(task_id)}",
        agent=agent,
        input=state.task.input,
        steps=steps,
        source=CaseSource(task_id=task_id, recorded_at=state.task.created_at.isoformat()),
    )
    case.expectations = expectations or default_expectations(case)
    return case


def default_expectations(case: Case) -> Expectations:
    """The recorded task's final answer and its tool calls (names and arguments) in order."""
    calls = [
        ExpectedCall(tool=call.tool, args=call.args)
        for step in case.steps
        for call in step.tool_calls
        if not call.rejected
    ]
    return Expectations(answer=case.answer, tool_calls=calls)


def _read(source: Any, task_id: str) -> tuple[TaskState, Any]:
    """The task's state and a function giving each step's messages, from a runner or a store."""
    if hasattr(source, "get_task_state"):  # An AgentRunner.
        state = source.get_task_state(task_id)
        return state, lambda step_id: source.get_messages_sent(task_id, step_id)
    state = source.load_task(task_id)
    if state is None:
        raise TaskNotFoundError(
            f"no task {task_id} in this store: list the tasks (`stepwise db list`) for its id",
            task_id=task_id,
        )
    return state, lambda step_id: source.load_messages_sent(task_id, step_id)


def _replies(state: TaskState) -> dict[str, ChatMessage]:
    """Each completed step's model reply: the first assistant message it added to memory."""
    found: dict[str, ChatMessage] = {}
    after = state.task.memory.get_all()
    for step_id in reversed(state.completed):
        stored = state.snapshots.get(step_id)
        if stored is None:
            continue
        snapshot = stored.memory
        if snapshot.messages is None:  # The step appended: its messages are the tail.
            added, before = after[snapshot.length :], after[: snapshot.length]
        else:  # The step rewrote the history: what it added is what was not there.
            before = snapshot.messages
            added = [m for m in after if m not in before]
        reply = next((m for m in added if m.role == "assistant"), None)
        if reply is not None:
            found[step_id] = reply
        after = before
    return found


def _case_step(
    output: TaskStepOutput, sent: list[ChatMessage], reply: ChatMessage | None, *, typed: bool
) -> CaseStep:
    step = output.task_step
    request = ModelRequest(messages=sent, tools=request_tools(step)) if sent else None
    recorded_reply = None
    if request is not None:
        message = reply or ChatMessage(role="assistant", content=_text(output.output))
        recorded_reply = ModelReply(message=message, usage=output.usage)
    calls = [
        RecordedToolCall(
            tool=call.tool_name,
            args=call.args,
            result=call.content,
            is_error=call.is_error,
            rejected=call.rejected,
            call_id=call.call_id,
        )
        for call in output.tool_calls
    ]
    return CaseStep(
        number=step.number or 0,
        kind=step.kind.value,
        name=step.name,
        input=step.input,
        request=request,
        reply=recorded_reply,
        tool_calls=calls,
        output=output.output,
        is_last=output.is_last,
        human=_human_acts(step, typed=typed and request is not None),
        usage=output.usage,
    )


def _human_acts(step: TaskStep, *, typed: bool) -> list[HumanAct]:
    """What a person did at `step`, as the replay repeats it."""
    acts: list[HumanAct] = []
    if step.status is StepStatus.SKIPPED:
        acts.append(HumanAct(act="skipped"))
    elif step.kind is StepKind.HUMAN:
        answer = INTERRUPT_KEY in step.step_state
        acts.append(
            HumanAct(act="edited_input", input=step.input)
            if answer
            else HumanAct(act="feedback", text=_text(step.input))
        )
    elif step.rejection is not None:
        acts.append(HumanAct(act="rejected_call", text=step.rejection))
    elif step.kind is StepKind.TOOL and step.edited:
        acts.append(
            HumanAct(act="edited_call", input=step.input, proposed_input=step.proposed_input)
        )
    elif step.edited:
        acts.append(
            HumanAct(act="edited_input", input=step.input, proposed_input=step.proposed_input)
        )
    elif step.needs_approval:
        acts.append(HumanAct(act="approved"))
    if typed:
        acts.append(HumanAct(act="typed_reply"))
    return acts


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
