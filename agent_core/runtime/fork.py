"""Copies of a task: under fresh ids (a trace's import), or forked from one completed step.

A fork is a new task that starts where the original stood just after the chosen step: the
same conversation, worker state, steps and usage up to it, and its own workspace folder
holding the original's files as they were then. Nothing of the original changes: the fork
is a renamed copy on which the later steps are undone, with their file writes reverted in
the copy's folder, then left out.
"""

from __future__ import annotations

import shutil

from agent_core.effects import Effect, FileWriteEffect
from agent_core.errors import UserError
from agent_core.runtime import undo
from agent_core.runtime.worker_state import dump_state
from agent_core.store.base import MemoryWrite, TaskChange
from agent_core.task_files import workspace_folder
from agent_core.types import (
    ForkPoint,
    StepStatus,
    TaskState,
    TaskStatus,
    TaskStep,
    new_id,
    utcnow,
)

__all__ = ["fork_state", "new_task_change", "renamed_copy"]


def renamed_copy(state: TaskState, task_id: str) -> tuple[TaskState, dict[str, str]]:
    """A copy of `state` under `task_id` with fresh step ids, at version 1; and the id map.

    The copy starts a thread of its own. Links to steps the state lacks are dropped: they
    name nothing there (undo removes the steps it dequeues), and a dangling id could name a
    step of another task.
    """
    ids = {old: new_id() for old in state.steps}
    steps = {ids[old]: _renamed_step(step, task_id, ids) for old, step in state.steps.items()}
    outputs = {
        ids[old]: output.model_copy(
            update={
                "task_step": steps[ids[old]],
                "next_steps": [
                    steps[ids[s.step_id]] for s in output.next_steps if s.step_id in ids
                ],
            }
        )
        for old, output in state.outputs.items()
    }
    snapshots = {
        ids[old]: snap.model_copy(update={"step_id": ids[old]})
        for old, snap in state.snapshots.items()
    }
    task = state.task.model_copy(
        update={"task_id": task_id, "thread_id": task_id, "updated_at": utcnow()}, deep=True
    )
    renamed = TaskState(
        task=task,
        steps=steps,
        outputs=outputs,
        queue=[ids[s] for s in state.queue],
        completed=[ids[s] for s in state.completed],
        snapshots=snapshots,
        version=1,
    )
    renamed.set_extra_state_json(dump_state(task.extra_state, task_id=task_id, step_id=""))
    return renamed, ids


def _renamed_step(step: TaskStep, task_id: str, ids: dict[str, str]) -> TaskStep:
    return step.model_copy(
        update={
            "task_id": task_id,
            "step_id": ids[step.step_id],
            "prev_step_ids": [ids[s] for s in step.prev_step_ids if s in ids],
            "next_step_ids": [ids[s] for s in step.next_step_ids if s in ids],
            "depends_on": [ids[s] for s in step.depends_on if s in ids],
            "claimed_by": None,
        },
        deep=True,
    )


def new_task_change(state: TaskState) -> TaskChange:
    """The change that stores `state` as a new task, every row of it."""
    return TaskChange(
        state=state,
        base_version=None,
        steps=list(state.steps.values()),
        outputs=list(state.outputs.values()),
        snapshots=list(state.snapshots.values()),
        memory=MemoryWrite(keep=0, append=state.task.memory.get_all()),
    )


def fork_state(original: TaskState, step_id: str) -> TaskState:
    """A new active task that stands where `original` stood just after step `step_id`.

    `original` should be a snapshot (`AgentRunner.snapshot_task_state`): it is only read.
    The fork's workspace folder receives a copy of the original's files, and the writes of
    the steps after `step_id` are reverted there, never in the original's folder.
    """
    if original.task.imported:
        raise UserError(
            "an imported task cannot be forked: its recorded file writes name another "
            "machine's folders, which undoing its later steps would touch",
            hint="open the trace to read it; run the agent again in a new task",
            remedy="new_task",
            code="fork_of_imported",
        )
    if step_id not in original.completed:
        raise UserError(
            f"step {step_id!r} is not a completed step of the task, so no fork can start from it",
            hint="fork from a step listed under the completed steps",
            code="fork_point_not_completed",
            params={"step_id": step_id},
        )
    fork, ids = renamed_copy(original, new_id())
    point = original.steps[step_id]
    fork.task.forked_from = ForkPoint(
        task_id=original.task_id, step_id=step_id, number=point.number
    )
    fork.task.imported = False
    fork.task.continued_from = None  # A thread of its own, as `renamed_copy` made it.
    fork.task.status = TaskStatus.ACTIVE
    _copy_workspace(original, fork)
    later = original.completed[original.completed.index(step_id) + 1 :]
    change = TaskChange(state=fork, base_version=None)
    for _ in later:
        undo.undo_last(fork, change)
    _drop(fork, {ids[s] for s in later})
    _rebranch(fork)
    return fork


def _copy_workspace(original: TaskState, fork: TaskState) -> None:
    """Copy the original's files into the fork's folder; point its file effects there."""
    source, target = workspace_folder(original.task), workspace_folder(fork.task)
    if source is None or target is None:
        return
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True)
    for output in fork.outputs.values():
        output.effects = [_moved(effect, str(source), str(target)) for effect in output.effects]


def _moved(effect: Effect, source: str, target: str) -> Effect:
    if not isinstance(effect, FileWriteEffect) or effect.folder != source:
        return effect
    return effect.model_copy(
        update={"folder": target, "path": target + effect.path.removeprefix(source)}
    )


def _drop(fork: TaskState, step_ids: set[str]) -> None:
    """Leave the undone later steps out of the fork: they belong to the original's story."""
    for step_id in step_ids:
        fork.steps.pop(step_id, None)
        fork.outputs.pop(step_id, None)
    for step in fork.steps.values():
        step.prev_step_ids = [s for s in step.prev_step_ids if s not in step_ids]
        step.next_step_ids = [s for s in step.next_step_ids if s not in step_ids]
    for output in fork.outputs.values():
        output.next_steps = [s for s in output.next_steps if s.step_id not in step_ids]


def _rebranch(fork: TaskState) -> None:
    """Put the re-queued step on its predecessor's branch: the fork has no sibling branch."""
    for queued_id in fork.queue:
        queued = fork.steps[queued_id]
        queued.status = StepStatus.UPCOMING  # One the original was running waits here.
        before = [fork.steps[s] for s in queued.prev_step_ids if s in fork.steps]
        if before:
            queued.branch_id = before[0].branch_id
