"""Copies of a task: under fresh ids (a trace's import), or forked from one completed step.

A fork is a new task that starts where the original stood just after the chosen step: the
same conversation, worker state, steps and usage up to it, and its own workspace folder
holding the original's files as they were then. Nothing of the original changes: the fork
is a renamed copy on which the later steps are undone, with their file writes reverted in
the copy's folder, then left out.

A fork may go on with another agent (`ForkAgent`): the copy keeps the conversation and the
steps up to the chosen one, forgets the old worker's state and queue, and queues the new
worker's first step, which continues the conversation rather than asking the question again.
An imported task can be forked so: its recorded steps touched no folder of this machine.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from agent_core._lazy import LazyDict
from agent_core.effects import Effect, FileWriteEffect
from agent_core.errors import UserError
from agent_core.runtime import undo
from agent_core.runtime.contracts import AgentWorker
from agent_core.runtime.worker_state import dump_state
from agent_core.store.base import MemoryWrite, PromptCopy, TaskChange
from agent_core.task_files import workspace_folder
from agent_core.types import (
    ForkPoint,
    StepSnapshot,
    StepStatus,
    Task,
    TaskState,
    TaskStatus,
    TaskStep,
    TaskStepOutput,
    new_id,
    utcnow,
)

__all__ = [
    "ForkAgent",
    "agent_named",
    "fork_state",
    "fork_with_prompts",
    "new_task_change",
    "provide_agent_names",
    "renamed_copy",
]


@dataclass(frozen=True, slots=True)
class ForkAgent:
    """The agent a fork goes on with: its worker, and the spec its tasks record."""

    worker: AgentWorker
    spec: dict[str, Any] | None


AgentNames = Callable[[str, "dict[str, Any] | None", Any], Any]
"""`(name, base spec, registry) -> AgentSpec`: a registered agent's spec on the base's model."""

_agent_names: AgentNames | None = None


def provide_agent_names(resolve: AgentNames) -> None:
    """Make `resolve` what turns an agent's name into its spec (`agent_core.spec` does)."""
    global _agent_names
    _agent_names = resolve


def agent_named(name: str, base: dict[str, Any] | None, registry: Any) -> Any:
    """The `AgentSpec` of registered agent `name`, on the model of spec `base`.

    Raises:
        UserError: Nothing provided it (`agent_core.spec` was never imported).
    """
    if _agent_names is None:
        raise UserError(
            f"an agent given by name ({name!r}) is looked up by agent_core.spec: import it, "
            "or pass an AgentSpec"
        )
    return _agent_names(name, base, registry)


def renamed_copy(
    state: TaskState, task_id: str, *, leave_out: Collection[str] = ()
) -> tuple[TaskState, dict[str, str]]:
    """A copy of `state` under `task_id` with fresh step ids, at version 1; and the id map.

    The copy starts a thread of its own. Links to steps the state lacks are dropped: they
    name nothing there (undo removes the steps it dequeues), and a dangling id could name a
    step of another task. Steps in `leave_out` are not copied (a fork's undone later steps).

    What no one changes in place is shared, not copied: messages (frozen), the outputs' and
    snapshots' contents; a step gets its own lists and dicts.
    """
    ids = {old: new_id() for old in state.steps if old not in leave_out}
    queued = set(state.queue)
    steps = {
        ids[old]: _renamed_step(step, task_id, ids, deep=old in queued)
        for old, step in state.steps.items()
        if old in ids
    }
    outputs = _renamed_outputs(state.outputs, steps, ids)
    snapshots = _renamed_snapshots(state.snapshots, ids)
    task = _task_copy(state.task, update={"task_id": task_id, "thread_id": task_id})
    renamed = TaskState(
        task=task,
        steps=steps,
        queue=[ids[s] for s in state.queue if s in ids],
        completed=[ids[s] for s in state.completed if s in ids],
        version=1,
    )
    renamed.outputs, renamed.snapshots = outputs, snapshots  # Built: not validated again.
    renamed.set_extra_state_json(dump_state(task.extra_state, task_id=task_id, step_id=""))
    return renamed, ids


def _renamed_outputs(
    outputs: dict[str, TaskStepOutput], steps: dict[str, TaskStep], ids: dict[str, str]
) -> dict[str, TaskStepOutput]:
    """The outputs under their new ids, built on first read from the original's stored form.

    A loaded task's stay unread: validating them all was most of a long task's fork.
    """
    if isinstance(outputs, LazyDict):

        def rebuild(new: str, old: str, stored: Any) -> TaskStepOutput:
            output = outputs.load_stored(old, stored)
            return _renamed_output(output, steps[new], steps, ids)

        return outputs.renamed(
            ids, lambda new, output: _renamed_output(output, steps[new], steps, ids), rebuild
        )
    return {
        ids[old]: _renamed_output(outputs[old], steps[ids[old]], steps, ids)
        for old in outputs
        if old in ids
    }


def _renamed_snapshots(
    snapshots: dict[str, StepSnapshot], ids: dict[str, str]
) -> dict[str, StepSnapshot]:
    """The snapshots under their new ids; a loaded task's stay unread (undo reads a few)."""
    if isinstance(snapshots, LazyDict):
        return snapshots.renamed(ids, lambda new, snap: snap.model_copy(update={"step_id": new}))
    return {
        ids[old]: snap.model_copy(update={"step_id": ids[old]})
        for old, snap in snapshots.items()
        if old in ids
    }


def _task_copy(task: Task, update: dict[str, Any]) -> Task:
    """A deep copy of `task` whose memory shares its (frozen) messages."""
    memo = {id(task.memory): task.memory.shared_copy()}
    copied = copy.deepcopy(task, memo)
    for name, value in {**update, "updated_at": utcnow()}.items():
        setattr(copied, name, value)
    return copied


def _renamed_output(
    output: TaskStepOutput, step: TaskStep, steps: dict[str, TaskStep], ids: dict[str, str]
) -> TaskStepOutput:
    # Built late (a lazy copy), an output may name steps the fork has dropped since.
    next_steps = [steps[ids[s.step_id]] for s in output.next_steps if ids.get(s.step_id) in steps]
    return output.model_copy(update={"task_step": step, "next_steps": next_steps})


def _renamed_step(step: TaskStep, task_id: str, ids: dict[str, str], *, deep: bool) -> TaskStep:
    """The step under its new id; a step that ran shares its input, a queued one copies it.

    A queued step is still worked on (its state, its input edited); a step that ran is
    history, and a deep copy of each made a long task's fork slow.
    """
    update: dict[str, Any] = {
        "task_id": task_id,
        "step_id": ids[step.step_id],
        "prev_step_ids": [ids[s] for s in step.prev_step_ids if s in ids],
        "next_step_ids": [ids[s] for s in step.next_step_ids if s in ids],
        "depends_on": [ids[s] for s in step.depends_on if s in ids],
        "claimed_by": None,
    }
    if not deep:
        update |= {
            "step_state": dict(step.step_state),
            "cannot": dict(step.cannot),
            "error_params": dict(step.error_params),
            "undo_warnings": list(step.undo_warnings),
        }
    return step.model_copy(update=update, deep=deep)


def new_task_change(
    state: TaskState, prompts_from: PromptCopy | None = None, *, same_store: bool = False
) -> TaskChange:
    """The change that stores `state` as a new task, every row of it.

    With `same_store` (the state was copied from a task the committing store loaded, as a
    fork is), outputs and snapshots still in their stored form go to the store as stored:
    another store's stored form is not its own. `prompts_from` names prompts to copy.
    """
    outputs, stored_outputs = _built_and_stored(state.outputs, same_store)
    snapshots, stored_snapshots = _built_and_stored(state.snapshots, same_store)
    return TaskChange(
        state=state,
        base_version=None,
        steps=list(state.steps.values()),
        outputs=outputs,
        snapshots=snapshots,
        memory=MemoryWrite(keep=0, append=state.task.memory.get_all()),
        stored_outputs=stored_outputs,
        stored_snapshots=stored_snapshots,
        prompts_from=prompts_from,
    )


def _built_and_stored(
    values: dict[str, Any], keep_stored: bool
) -> tuple[list[Any], dict[str, Any]]:
    """The values built, and those still stored (by key), building none of the latter."""
    if not keep_stored or not isinstance(values, LazyDict):
        return list(values.values()), {}
    stored = values.stored()
    return [values[key] for key in values if key not in stored], stored


def fork_with_prompts(
    original: TaskState, step_id: str, *, agent: ForkAgent | None = None
) -> tuple[TaskState, PromptCopy]:
    """`fork_state`, and the prompts the store copies: a kept step saw what the original saw."""
    fork, ids = _fork(original, step_id, agent)
    kept = {new: old for old, new in ids.items() if new in fork.outputs}
    return fork, PromptCopy(task_id=original.task_id, steps=kept)


def fork_state(original: TaskState, step_id: str, *, agent: ForkAgent | None = None) -> TaskState:
    """A new active task that stands where `original` stood just after step `step_id`.

    `original` should be a snapshot (`AgentRunner.snapshot_task_state`): it is only read.
    The fork's workspace folder receives a copy of the original's files, and the writes of
    the steps after `step_id` are reverted there, never in the original's folder. With
    `agent`, the fork goes on with that agent (see the module docstring).
    """
    return _fork(original, step_id, agent)[0]


def _fork(
    original: TaskState, step_id: str, agent: ForkAgent | None
) -> tuple[TaskState, dict[str, str]]:
    if original.task.imported and (agent is None or _wrote_files(original)):
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
    if agent is not None:
        _check_agent(original, step_id, agent)
    later = original.completed[original.completed.index(step_id) + 1 :]
    undone_after = _undone_after(original, step_id)
    fork, ids = renamed_copy(original, new_id(), leave_out=set(undone_after))
    point = original.steps[step_id]
    fork.task.forked_from = ForkPoint(
        task_id=original.task_id, step_id=step_id, number=point.number
    )
    fork.task.imported = False
    fork.task.continued_from = None  # A thread of its own, as `renamed_copy` made it.
    fork.task.status = TaskStatus.ACTIVE
    _copy_workspace(original, fork)
    change = TaskChange(state=fork, base_version=None)
    if later:
        undo.undo_steps(fork, change, len(later))
    _drop(fork, {ids[s] for s in later})
    _rebranch(fork)
    _unedit(fork)
    if agent is not None:
        _hand_over(fork, agent)
    return fork, ids


def _undone_after(original: TaskState, step_id: str) -> list[str]:
    """The original's undone steps that ran after `step_id`: branches of the original's story.

    A step that follows `step_id` (or one of its followers) in the DAG ran after it; an undone
    step elsewhere was undone before `step_id` ran, and is history the fork shares.
    """
    followers: dict[str, list[str]] = {}
    for step in original.steps.values():
        for prev in step.prev_step_ids:
            followers.setdefault(prev, []).append(step.step_id)
    after, frontier = {step_id}, [step_id]
    while frontier:  # Each step once: a long task's fork stays linear in its steps.
        for follower in followers.get(frontier.pop(), []):
            if follower not in after:
                after.add(follower)
                frontier.append(follower)
    return [s for s in after if original.steps[s].status is StepStatus.UNDONE]


def _unedit(fork: TaskState) -> None:
    """Give the fork's upcoming steps their proposed input: an edit came after the fork point."""
    for queued_id in fork.queue:
        queued = fork.steps[queued_id]
        if queued.edited:
            queued.input, queued.proposed_input = queued.proposed_input, None
            queued.edited = False


def _wrote_files(state: TaskState) -> bool:
    return any(output.effects for output in state.outputs.values())


def _check_agent(original: TaskState, step_id: str, agent: ForkAgent) -> None:
    """Refuse an agent that cannot go on from the recorded conversation, before any copy."""
    reason = getattr(agent.worker, "keeps_own_conversation", None)
    if reason:
        raise UserError(
            f"this agent cannot go on from another task's conversation: {reason}",
            hint="fork with one of the built-in workers, or an agent that reads the task's memory",
            code="conversation_not_editable",
            params={"reason": reason, "action": "fork with another agent"},
        )
    tools = getattr(agent.worker, "tools", None)
    if tools is None:  # The agent does not say which tools it has: nothing to check.
        return
    recorded = {
        call.tool_name
        for output in original.outputs.values()
        if output.task_step.status is StepStatus.COMPLETED
        for call in output.tool_calls
    }
    missing = sorted(recorded - {str(name) for name in tools})
    if missing:
        raise UserError(
            f"the agent has no tool named {', '.join(map(repr, missing))}, which the recording "
            "called; its model would call a tool it lacks",
            hint="give the agent those tools (AgentSpec tools=, or --tools NAME=MODULE for your "
            "own), or fork with an agent that has them",
            code="fork_tool_missing",
            params={"tools": missing, "step_id": step_id},
        )


def _hand_over(fork: TaskState, agent: ForkAgent) -> None:
    """The fork goes on with `agent`: its spec, a fresh worker state, its first step queued."""
    pending = _unanswered_calls(fork.task.memory.get_all())
    if pending:
        raise UserError(
            f"the fork would start after a model step whose tool calls ({', '.join(pending)}) "
            "have no results yet, which no model accepts",
            hint="fork from the last tool step after that model step",
            code="fork_calls_unanswered",
            params={"tools": pending},
        )
    _drop(fork, set(fork.queue))  # The old worker's next steps: the new one queues its own.
    fork.task.spec = agent.spec
    fork.task.imported_from = None
    fork.task.extra_state = {}
    fork.set_extra_state_json("{}")
    first = agent.worker.initialize_step(fork.task)
    first.input = None  # The conversation already holds the question: the model goes on.
    if fork.completed:
        previous = fork.steps[fork.completed[-1]]
        previous.link_step(first)
        first.branch_id = previous.branch_id
    fork.steps[first.step_id] = first
    fork.queue = [first.step_id]


def _unanswered_calls(messages: list[Any]) -> list[str]:
    """The tool calls of the last assistant message that no later tool message answers."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            answered = {m.tool_call_id for m in messages[index + 1 :] if m.role == "tool"}
            later = [m for m in messages[index + 1 :] if m.role == "tool"]
            return [
                call.name
                for position, call in enumerate(message.tool_calls)
                if (call.id and call.id not in answered) or (not call.id and position >= len(later))
            ]
    return []


def _copy_workspace(original: TaskState, fork: TaskState) -> None:
    """Copy the original's files into the fork's folder; point its file effects there."""
    source, target = workspace_folder(original.task), workspace_folder(fork.task)
    if source is None or target is None:
        return
    if not source.is_dir():  # No file was written there: no effect to point elsewhere.
        return
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
    stored = fork.outputs.stored() if isinstance(fork.outputs, LazyDict) else {}
    for key in fork.outputs:
        if key not in stored:  # A stored one names only the steps there when it is built.
            output = fork.outputs[key]
            output.next_steps = [s for s in output.next_steps if s.step_id not in step_ids]


def _rebranch(fork: TaskState) -> None:
    """Put the re-queued step on its predecessor's branch: the fork has no sibling branch."""
    for queued_id in fork.queue:
        queued = fork.steps[queued_id]
        queued.status = StepStatus.UPCOMING  # One the original was running waits here.
        before = [fork.steps[s] for s in queued.prev_step_ids if s in fork.steps]
        if before:
            queued.branch_id = before[0].branch_id
