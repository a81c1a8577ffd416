"""How a task is split into records for storage and put back together; shared by the stores."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter

from agent_core._lazy import LazyDict, paused_gc
from agent_core.errors import StoreError
from agent_core.llms.base import ChatMessage, Usage
from agent_core.memory import ChatMemoryBuffer
from agent_core.store.base import TaskSummary
from agent_core.types import (
    StepSnapshot,
    StepStatus,
    Task,
    TaskState,
    TaskStatus,
    TaskStep,
    TaskStepOutput,
)

__all__ = [
    "assemble_state",
    "damaged_summary",
    "messages_of",
    "output_record",
    "paused_gc",
    "prompt_record",
    "setting_record",
    "summary_of",
    "task_record",
]

# Rewritten on every commit, so it holds only what is small and changes: the input is written
# once, memory grows by appended rows, and the runner already serialised the worker state.
_TASK_ROW_EXCLUDE = {"memory", "extra_state", "input"}


def task_record(state: TaskState) -> str:
    """The task row as JSON: the task's small fields, its queue and memory's token limit."""
    # Serialised by pydantic-core and extended in place: a third of a dict round trip's cost.
    fields = state.task.model_dump_json(exclude=_TASK_ROW_EXCLUDE)
    extra = json.dumps({"token_limit": state.task.memory.token_limit, "queue": state.queue})
    return f"{fields[:-1]},{extra[1:]}"


def setting_record(name: str, value: Any) -> str:
    """A setting's value as strict JSON (no NaN or infinity, which other readers reject)."""
    try:
        return json.dumps(value, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"setting {name!r} must be plain JSON data (dict, list, str, finite number, bool, "
            f"None): {exc}; for a pydantic model pass model.model_dump(mode='json')"
        ) from None


_MESSAGES = TypeAdapter(list[ChatMessage])  # One C call for a whole prompt.


def output_record(output: TaskStepOutput) -> str:
    """A step output as JSON, without its step and next steps: those are stored as steps.

    Keeping one copy of each step means an output always agrees with its step's current
    status (an undone step's output says `undone` after a reload too).
    """
    return output.model_dump_json(exclude={"task_step", "next_steps", "messages_sent"})


def prompt_record(output: TaskStepOutput) -> str | None:
    """The messages a step sent, as JSON kept apart from its output (None when it sent none).

    A prompt holds the whole history the model saw, so prompts grow with the task: kept in
    the output, they would make loading a long task read every step's history again.
    """
    if not output.messages_sent:
        return None
    return _MESSAGES.dump_json(output.messages_sent, exclude_defaults=True).decode()


def messages_of(record: str) -> list[ChatMessage]:
    """The messages of a `prompt_record`."""
    return _MESSAGES.validate_json(record)


def _load_output(data: str, step: TaskStep, steps: dict[str, TaskStep]) -> TaskStepOutput:
    fields = json.loads(data)
    fields["task_step"] = step
    fields["next_steps"] = [steps[i] for i in step.next_step_ids if i in steps]
    return TaskStepOutput.model_validate(fields)


def _stored(task_id: str, what: str, load: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    """`load`, failing as a damaged task when a value read after loading cannot be built."""

    def build(step_id: str, raw: Any) -> Any:
        try:
            return load(step_id, raw)
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise StoreError(
                f"task {task_id} is damaged: the {what} of step {step_id} cannot be read "
                f"({type(exc).__name__}: {str(exc)[:300]})",
                hint="delete_task() still removes it; the other tasks are not affected",
                task_id=task_id,
            ) from exc

    return build


def _check_shape(what: str, step_id: str, raw: Any) -> None:
    """Refuse at load what cannot be a stored object, without building it (that comes later)."""
    if isinstance(raw, bytes) or (isinstance(raw, str) and raw.lstrip().startswith("{")):
        return
    raise ValueError(f"the {what} of step {step_id} is not a stored object: {str(raw)[:40]!r}")


def summary_of(state: TaskState) -> TaskSummary:
    """The list-view line for a task."""
    task = state.task
    return TaskSummary(
        task_id=task.task_id,
        input=task.input,
        status=task.status,
        created_at=task.created_at,
        updated_at=task.updated_at,
        steps_completed=len(state.completed),
        steps_upcoming=len(state.queue),
        usage=task.usage,
        imported=task.imported,
        thread_id=task.thread_id,
    )


def damaged_summary(task_id: object, task_input: object, exc: Exception) -> TaskSummary:
    """The list-view line for a task whose row cannot be read: failed, and saying why."""
    moment = datetime.fromtimestamp(0, UTC)
    return TaskSummary(
        task_id=str(task_id),
        input=str(task_input),
        status=TaskStatus.FAILED,
        created_at=moment,
        updated_at=moment,
        steps_completed=0,
        steps_upcoming=0,
        usage=Usage(),
        damaged=f"{type(exc).__name__}: {str(exc)[:200]}",
    )


def _step_ran_at(step: TaskStep) -> datetime:
    return step.finished_at or step.created_at


def _in_history(step: TaskStep) -> bool:
    """Completed steps, and skips made since skips became undoable history (they have a number)."""
    if step.status is StepStatus.SKIPPED:
        return step.number is not None
    return step.status is StepStatus.COMPLETED


def assemble_state(
    *,
    task_input: str,
    task_json: str,
    extra_state_json: str,
    version: int,
    messages: list[ChatMessage],
    steps: Iterable[TaskStep],
    outputs: Iterable[tuple[str, Any]],
    snapshots: Iterable[tuple[str, str]],
    unpack: Callable[[Any], str] = str,
) -> TaskState:
    """Rebuild a `TaskState` from stored records.

    `outputs` and `snapshots` are (step_id, stored JSON) pairs, `unpack` turning an output's
    stored value into its JSON. They are built when first read (`agent_core._lazy`): a long
    task's load validated thousands that no one reads.
    """
    row = json.loads(task_json)
    token_limit = row.pop("token_limit")
    queue = row.pop("queue")
    task = Task.model_validate(
        {
            **row,
            "input": task_input,
            "memory": ChatMemoryBuffer(messages=messages, token_limit=token_limit),
            "extra_state": json.loads(extra_state_json),
        }
    )
    step_map = {step.step_id: step for step in steps}
    completed = sorted(
        (s for s in step_map.values() if _in_history(s)),
        key=lambda s: s.number or 0,
    )
    state = TaskState(
        task=task,
        steps=step_map,
        queue=queue,
        completed=[step.step_id for step in completed],
        version=version,
    )
    state.outputs = _lazy_outputs(task.task_id, outputs, step_map, unpack)
    state.snapshots = _lazy_snapshots(task.task_id, snapshots)
    state.set_extra_state_json(extra_state_json)
    return state


def _lazy_outputs(
    task_id: str,
    outputs: Iterable[tuple[str, Any]],
    steps: dict[str, TaskStep],
    unpack: Callable[[Any], str],
) -> LazyDict:
    """The outputs in the order the steps ran, as a live runner adds them.

    Rows come in the order the steps were created, and feedback is created after the step
    queued before it runs.
    """
    raw = {}
    for step_id, data in outputs:
        if step_id in steps:
            _check_shape("output", step_id, data)
            raw[step_id] = data
    ordered = sorted(raw, key=lambda step_id: _step_ran_at(steps[step_id]))

    def load(step_id: str, data: Any) -> TaskStepOutput:
        return _load_output(unpack(data), steps[step_id], steps)

    return LazyDict({i: raw[i] for i in ordered}, _stored(task_id, "output", load))


def _lazy_snapshots(task_id: str, snapshots: Iterable[tuple[str, str]]) -> LazyDict:
    raw = {}
    for step_id, data in snapshots:
        _check_shape("undo snapshot", step_id, data)
        raw[step_id] = data

    def load(step_id: str, data: str) -> StepSnapshot:
        snapshot = StepSnapshot.model_validate_json(data)
        snapshot.step_id = step_id  # Its key: a renamed copy (a fork) keeps the stored JSON.
        return snapshot

    return LazyDict(raw, _stored(task_id, "undo snapshot", load))
