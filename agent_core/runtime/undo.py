"""Undo as a state transition: put a task back exactly as it was before its last step.

The undone step keeps its output and is marked `undone`; a fresh copy of it goes back to the
front of the queue on a new branch, so re-running it grows a second branch beside the first
instead of overwriting history. Steps the undone step queued, which never ran, are dropped.
"""

from __future__ import annotations

import json
import logging

from agent_core.effects import revert_effects
from agent_core.memory import ChatMemoryBuffer
from agent_core.store.base import MemoryWrite, TaskChange
from agent_core.telemetry import hooks as telemetry_hooks
from agent_core.types import (
    INTERRUPT_KEY,
    StepKind,
    StepSnapshot,
    StepStatus,
    TaskState,
    TaskStep,
    new_id,
    short_id,
)

__all__ = ["link_feedback", "memory_write", "undo_last", "undo_steps"]

logger = logging.getLogger(__name__)


def undo_last(state: TaskState, change: TaskChange) -> TaskStep:
    """Undo the task's last completed step, recording what changed in `change`; return it."""
    return undo_steps(state, change, 1)


def undo_steps(state: TaskState, change: TaskChange, count: int) -> TaskStep:
    """Undo the task's last `count` completed steps into `change`; return the last undone.

    The steps each undo touched are gathered once, at the end: gathering them after each
    made undoing half of a long task (a fork) quadratic in its steps.
    """
    touched = {s.step_id: s for s in change.steps}
    step = None
    for _ in range(count):
        step, steps = _undo_one(state, change)
        touched.update((s.step_id, s) for s in steps)
    change.steps = [s for s in touched.values() if s.step_id in state.steps]
    if step is None:
        raise ValueError("count must be at least 1")
    return step


def _undo_one(state: TaskState, change: TaskChange) -> tuple[TaskStep, list[TaskStep]]:
    step_id = state.completed.pop()
    step = state.steps[step_id]
    snapshot = state.snapshots.pop(step_id)
    task = state.task
    task.memory.restore(snapshot.memory)
    task.extra_state = json.loads(snapshot.extra_state_json)
    state.set_extra_state_json(snapshot.extra_state_json)
    output = state.outputs[step_id]
    task.usage = task.usage - output.usage
    step.undo_warnings = revert_effects(output.effects)
    for warning in step.undo_warnings:
        logger.warning("undo of step %s: %s", step_id, warning)
    step.status = StepStatus.UNDONE
    change.dropped_snapshots.append(step_id)
    if snapshot.memory.messages is not None:
        change.memory = MemoryWrite(keep=0, append=task.memory.get_all())
    elif change.memory is None or change.memory.keep > len(task.memory):
        change.memory = MemoryWrite(keep=len(task.memory))
    if step.kind is StepKind.HUMAN and INTERRUPT_KEY not in step.step_state:
        touched = _unlink_feedback(state, step)
    else:
        touched = _requeue(state, step, change)
    telemetry_hooks.step_undone(state, step, change)
    return step, [step, *touched]


def _requeue(state: TaskState, step: TaskStep, change: TaskChange) -> list[TaskStep]:
    children = [s for s in state.queue if step.step_id in state.steps[s].prev_step_ids]
    for child_id in children:
        state.queue.remove(child_id)
        del state.steps[child_id]
        if child_id in step.next_step_ids:
            step.next_step_ids.remove(child_id)
    change.dropped_steps.extend(children)
    # An answer to the agent's question (an interrupt) is undone with it: the question waits
    # for a person again, as it did before it was answered.
    asks = INTERRUPT_KEY in step.step_state
    again = TaskStep(
        task_id=step.task_id,
        input=None if asks else step.input,
        edited=step.edited and not asks,
        proposed_input=None if asks else step.proposed_input,
        kind=step.kind,
        name=step.name,
        cannot=dict(step.cannot),
        needs_approval=step.needs_approval,
        step_state=dict(step.step_state),
        prev_step_ids=list(step.prev_step_ids),
        depends_on=list(step.depends_on),
        branch_id=short_id(new_id()),
    )
    state.steps[again.step_id] = again
    state.queue.insert(0, again.step_id)
    touched = [again]
    # Steps that waited for the undone step, or for a child of it that carried it on
    # (`TaskStep.continues`), wait for its re-run now.
    replaced = {step.step_id, *children}
    for queued_id in state.queue:
        queued = state.steps[queued_id]
        if replaced.intersection(queued.depends_on):
            renamed = [again.step_id if d in replaced else d for d in queued.depends_on]
            queued.depends_on = list(dict.fromkeys(renamed))  # In order, once each.
            touched.append(queued)
    return touched


def link_feedback(state: TaskState, feedback: TaskStep) -> None:
    """Draw a feedback step before the steps it precedes (the upcoming ones)."""
    for queued_id in state.queue:
        state.steps[queued_id].prev_step_ids.append(feedback.step_id)


def _unlink_feedback(state: TaskState, feedback: TaskStep) -> list[TaskStep]:
    touched = []
    for queued_id in state.queue:
        queued = state.steps[queued_id]
        if feedback.step_id in queued.prev_step_ids:
            queued.prev_step_ids.remove(feedback.step_id)
            touched.append(queued)
    return touched


def memory_write(snapshot: StepSnapshot, memory: ChatMemoryBuffer) -> MemoryWrite:
    """What the store must write of `memory`, given the snapshot taken before this commit."""
    if snapshot.memory.messages is not None:  # The step rewrote history.
        return MemoryWrite(keep=0, append=memory.get_all())
    # The store holds exactly the messages from before this commit: a plain append.
    keep = snapshot.memory.length
    return MemoryWrite(keep=keep, append=memory.messages[keep:], truncate=False)
