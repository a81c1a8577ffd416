"""Which step runs next, and how a completed step moves the queue: pure functions of a task.

Kept apart from the runner so that the rules (readiness, claims, what a worker may queue)
read in one place and the runner reads as orchestration.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_core.errors import (
    ConflictError,
    NothingToRunError,
    NotReadyError,
    StepError,
    StepNotFoundError,
    TaskNotActiveError,
    UserError,
)
from agent_core.runtime.claims import IN_FLIGHT, claim_is_stale, claim_owner
from agent_core.types import (
    DONE_STATUSES,
    StepAction,
    StepInput,
    StepStatus,
    TaskState,
    TaskStatus,
    TaskStep,
    short_id,
    utcnow,
)

__all__ = [
    "adopt_next_steps",
    "check_active",
    "check_runnable",
    "hand_over",
    "is_claimable",
    "mark_completed",
    "nothing_to_run",
    "pick_step",
    "resolve_step",
    "step_of",
]


def check_active(state: TaskState, action: str) -> None:
    """Raise `TaskNotActiveError` unless the task may still `action` (run, undo steps...)."""
    task = state.task
    why = {
        TaskStatus.ABANDONED: "was abandoned",
        TaskStatus.COMPLETED: "is finished (finalized)",
    }.get(task.status)
    if task.imported:
        why = "is an imported copy, read only"
    if why is not None:
        raise TaskNotActiveError(
            f"task {short_id(state.task_id)} {why}, so it cannot {action}",
            hint="its steps stay for inspection; create_task() starts a new task",
            remedy="new_task",
            task_id=state.task_id,
            params={"status": "imported" if task.imported else task.status.value, "action": action},
        )


def check_can(step: TaskStep, action: StepAction) -> None:
    """Raise `UserError` if the step's worker cannot honour `action` (`TaskStep.cannot`)."""
    reason = step.cannot.get(action)
    if reason is None:
        return
    raise UserError(
        f"step {short_id(step.step_id)} cannot be {_PAST[action]}: {reason}",
        remedy="undo",
        task_id=step.task_id,
        step_id=step.step_id,
        code="step_action_unsupported",
        params={"action": action.value, "reason": reason},
    )


_PAST = {
    StepAction.EDIT: "edited",
    StepAction.SKIP: "skipped",
    StepAction.REJECT: "rejected",
    StepAction.FEEDBACK: "preceded by feedback",
}


def step_of(state: TaskState, step_id: str) -> TaskStep:
    """The step with this id, or `StepNotFoundError` listing the upcoming ones."""
    step = state.steps.get(step_id)
    if step is None:
        upcoming = ", ".join(state.queue) or "none"
        raise StepNotFoundError(
            f"task {short_id(state.task_id)} has no step {step_id!r}",
            hint=f"its upcoming steps are: {upcoming}",
            task_id=state.task_id,
            step_id=step_id,
        )
    return step


def is_claimable(step: TaskStep) -> bool:
    """Whether no live run holds the step (a crashed run's claim does not count)."""
    if step.status is not StepStatus.RUNNING:
        # Another runner of this process may be running it before its claim is stored.
        return not IN_FLIGHT.runs_step(step.step_id)
    return claim_is_stale(step.claimed_by, step.step_id)


def check_runnable(state: TaskState, step: TaskStep) -> None:
    """Raise unless `step` may start now: not running elsewhere, dependencies completed."""
    if not is_claimable(step):
        raise ConflictError(
            f"step {step.step_id} of task {short_id(state.task_id)} is already running "
            f"({claim_owner(step.claimed_by) if step.claimed_by else 'in this process'})",
            hint="wait for it to finish",
            remedy="wait",
            task_id=state.task_id,
            step_id=step.step_id,
            code="step_running",
        )
    waiting = [
        dep
        for dep in step.depends_on
        if dep in state.steps and state.steps[dep].status not in DONE_STATUSES
    ]
    if waiting:
        raise NotReadyError(
            f"step {step.step_id} waits for steps {', '.join(waiting)} to complete",
            hint="run those first",
            waiting_on=waiting,
            task_id=state.task_id,
            step_id=step.step_id,
        )


def pick_step(state: TaskState, step_id: str | None) -> TaskStep:
    """`step_id` if it may run, else the first ready step of the queue."""
    if step_id is not None:
        step = step_of(state, step_id)
        if step_id not in state.queue:
            raise NothingToRunError(
                f"step {step_id} of task {short_id(state.task_id)} is {step.status.value}; "
                "only upcoming or failed steps can run",
                hint="undo_step() makes a completed one upcoming again",
                remedy="undo",
                task_id=state.task_id,
                step_id=step_id,
                code="step_not_runnable",
                params={"status": step.status.value, "action": "run"},
            )
        check_runnable(state, step)
        return step
    for candidate_id in state.queue:
        candidate = state.steps[candidate_id]
        if state.is_ready(candidate) and is_claimable(candidate):
            return candidate
    raise nothing_to_run(state)


def nothing_to_run(state: TaskState) -> UserError:
    """The error that says why no step of the task can run now."""
    task = short_id(state.task_id)
    if not state.queue:
        last = state.last_output
        if last is not None and last.is_last:
            return NothingToRunError(
                f"task {task} has no upcoming step; it finished at step {last.task_step.number}",
                hint="call finalize_response(), or undo_step() to go back",
                remedy="finalize",
                task_id=state.task_id,
                code="task_finished",
                params={"finished_at": last.task_step.number},
            )
        return NothingToRunError(
            f"task {task} has no upcoming step",
            hint="undo_step() goes back, create_task() starts over",
            remedy="undo" if state.completed else "new_task",
            task_id=state.task_id,
        )
    if any(not is_claimable(state.steps[s]) for s in state.queue):
        return ConflictError(
            f"every ready step of task {task} is already running",
            hint="wait for it to finish",
            remedy="wait",
            task_id=state.task_id,
            code="step_running",
        )
    return NotReadyError(
        f"no upcoming step of task {task} is ready: each waits on steps not completed yet",
        task_id=state.task_id,
    )


def adopt_next_steps(
    state: TaskState, step: TaskStep, next_steps: Sequence[TaskStep]
) -> list[TaskStep]:
    """Check the steps a worker queued and tie them to `step`'s branch."""
    new_ids: set[str] = set()
    for child in next_steps:
        if child.task_id != state.task_id or child.step_id in state.steps:
            raise StepError(
                f"the worker queued step {child.step_id} that belongs to task "
                f"{short_id(child.task_id)} or already exists; next steps must be new steps "
                "of this task (use step.get_next_step())",
                task_id=state.task_id,
                step_id=step.step_id,
            )
        new_ids.add(child.step_id)
    for child in next_steps:
        missing = [d for d in child.depends_on if d not in state.steps and d not in new_ids]
        if missing:
            raise StepError(
                f"the worker queued step {child.step_id} depending on unknown steps {missing}",
                task_id=state.task_id,
                step_id=step.step_id,
            )
        if not child.prev_step_ids:
            child.prev_step_ids = [step.step_id]
        child.branch_id = step.branch_id
        child.status = StepStatus.UPCOMING
    return list(next_steps)


def hand_over(state: TaskState, step: TaskStep, next_steps: list[TaskStep]) -> list[TaskStep]:
    """Point the queued steps that wait for `step` at the child that continues it; return them."""
    heir = next((child for child in next_steps if child.continues == step.step_id), None)
    if heir is None:
        return []
    moved = []
    for queued_id in state.queue:
        queued = state.steps[queued_id]
        if queued is not heir and step.step_id in queued.depends_on:
            queued.depends_on = [
                heir.step_id if d == step.step_id else d for d in queued.depends_on
            ]
            moved.append(queued)
    return moved


def mark_completed(state: TaskState, step: TaskStep, next_steps: list[TaskStep]) -> None:
    """Move `step` from the queue to the completed list, queueing its children."""
    state.queue.remove(step.step_id)
    for child in next_steps:
        state.steps[child.step_id] = child
        state.queue.append(child.step_id)
        step.next_step_ids.append(child.step_id)
    step.status = StepStatus.COMPLETED
    step.claimed_by = None
    step.finished_at = utcnow()
    step.number = len(state.completed) + 1
    state.completed.append(step.step_id)


def resolve_step(
    state: TaskState, input: StepInput, step: TaskStep | str | None, step_id: str | None
) -> tuple[str | None, StepInput]:
    """The step to run and its input, from LlamaIndex's `(input, step)` or `step_id=`.

    `step` is a `TaskStep` or a step id. A `TaskStep` copy whose input the caller changed
    runs with that input, as LlamaIndex runs the object it is given.
    """
    if step is None:
        if isinstance(input, str) and step_id is None and input in state.steps:
            # Stepwise's order was (task_id, step_id, input): say so rather than run the id.
            raise UserError(
                f"{short_id(input)} is a step id of this task, passed as the input: run_step "
                "takes (task_id, input, step), LlamaIndex's order",
                hint="pass step_id=... or step=... to choose the step",
                task_id=state.task_id,
            )
        return step_id, input
    chosen = step.step_id if isinstance(step, TaskStep) else step
    if not isinstance(chosen, str):
        raise UserError(f"step must be a TaskStep or a step id, got {type(step).__name__}")
    if step_id is not None and step_id != chosen:
        raise UserError(f"step {short_id(chosen)} and step_id={short_id(step_id)} disagree")
    stored = state.steps.get(chosen)
    if isinstance(step, TaskStep) and stored is not None and step is not stored:
        if input is None and step.input != stored.input:
            input = step.input
    return chosen, input
