"""Re-run on save: a task run again from its step N on the code as it is now.

The steps before N are answered from the task's recording on the new code: the model by the
recorded replies and every tool by its recorded result (`replay_case` with `tools="recorded"`,
leniently: a request that the new code words otherwise is still answered, since re-running
*is* trying the new code). No model is called and no tool touches anything. The new task
then stands at step N, upcoming, with the task's agent spec: the runner a face builds for it
from the reloaded code runs step N and what follows live.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_core.errors import UserError
from agent_core.recordings.expectations import Expectations
from agent_core.recordings.from_task import case_from_task
from agent_core.recordings.replay import replay_case
from agent_core.store.base import Store
from agent_core.types import short_id
from agent_core.user_code.registry import UserCodeRegistry

__all__ = ["Rerun", "rerun_from"]


@dataclass(frozen=True)
class Rerun:
    """The task a re-run made, standing at the step it re-runs from."""

    task_id: str
    from_step: int
    replayed: int
    """Steps answered from the recording (those before `from_step`)."""


def rerun_from(
    source: Any,
    task_id: str,
    step: int,
    *,
    store: Store,
    registry: UserCodeRegistry | None = None,
    project: str | Path = ".",
) -> Rerun:
    """A new task in `store`: task `task_id` replayed up to step `step`, which is upcoming.

    Args:
        source: An `AgentRunner` or a `Store` holding the task.
        task_id: The task to re-run.
        step: The first step to run live (1 to the task's number of completed steps).
        store: Where the new task is kept (the face's own store, to open it there).
        registry: The user-code registry with the reloaded code (default: one on `project`).
        project: The user's project folder.

    Raises:
        UserError: `rerun_step_invalid`, or `rerun_diverged` when the new code cannot be
            brought to step `step` from the recording (no task is left behind then).
    """
    case = case_from_task(source, task_id, name=f"rerun-{short_id(task_id)}")
    if not 1 <= step <= len(case.steps):
        raise UserError(
            f"task {short_id(task_id)} has steps 1 to {len(case.steps)}; step {step} is none",
            hint="re-run from one of its completed steps",
            task_id=task_id,
            code="rerun_step_invalid",
            params={"step": step, "steps": len(case.steps)},
        )
    prefix = case.model_copy(
        update={"steps": case.steps[: step - 1], "expectations": Expectations()}
    )
    result = replay_case(  # Unlabelled: the new task is the person's to go on with, live.
        prefix,
        tools="recorded",
        update=True,
        registry=registry,
        store=store,
        project=project,
        label=False,
    )
    problem = result.error or result.divergence
    if problem is not None:
        if result.task_id:
            store.delete_task(result.task_id)
        raise UserError(
            f"could not bring the new code to step {step} from the recording: {problem}",
            hint="re-run from an earlier step",
            task_id=task_id,
            code="rerun_diverged",
            params={"step": step, "detail": str(problem)},
        )
    return Rerun(task_id=result.task_id, from_step=step, replayed=result.steps)
