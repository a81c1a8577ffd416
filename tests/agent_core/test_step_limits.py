"""A step its worker cannot edit, skip, reject or precede with feedback (`TaskStep.cannot`),
and the traceback a step failed by code outside the runtime records."""

from __future__ import annotations

from typing import Any

import pytest

from agent_core import AgentRunner
from agent_core.errors import StepError, UserError
from agent_core.store import SQLiteStore
from agent_core.types import StepAction, StepKind, Task, TaskStep, TaskStepOutput
from agent_core.workers.base import BaseAgentWorker

NO_EDIT = "this framework runs the queued calls as they are"


class _LockedWorker(BaseAgentWorker):
    """Two steps; the second may not be edited, skipped, rejected or preceded by feedback."""

    def __init__(self, *, fail_with: Exception | None = None) -> None:
        self.fail_with = fail_with

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        return TaskStep(task_id=task.task_id, input=task.input, name="first node")

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        if step.name == "second node":
            if self.fail_with is not None:
                _raise_from_users_code(self.fail_with)
            return TaskStepOutput(output=f"done: {step.input}", task_step=step, is_last=True)
        cannot = dict.fromkeys(StepAction, NO_EDIT)
        follow = step.get_next_step(
            kind=StepKind.TOOL,
            input={"tool": "t", "args": {}},
            name="second node",
            cannot=cannot,
            needs_approval=True,
        )
        return TaskStepOutput(output="queued", task_step=step, next_steps=[follow])


def _raise_from_users_code(exc: Exception) -> None:
    raise exc


def _at_locked_step(runner: AgentRunner) -> tuple[str, TaskStep]:
    task = runner.create_task("go")
    runner.run_step(task.task_id)
    (locked,) = runner.get_upcoming_steps(task.task_id)
    return task.task_id, locked


@pytest.mark.parametrize(
    ("action", "attempt"),
    [
        ("edit", lambda r, t, s: r.edit_step(t, s.step_id, {"tool": "t", "args": {"x": 1}})),
        ("edit", lambda r, t, s: r.run_step(t, {"tool": "t", "args": {"x": 1}})),
        ("skip", lambda r, t, s: r.skip_step(t, s.step_id)),
        ("reject", lambda r, t, s: r.reject_step(t, s.step_id, message="no")),
        ("feedback", lambda r, t, s: r.add_feedback(t, "try another way")),
    ],
)
def test_a_step_refuses_what_its_framework_cannot_do_and_nothing_changes(action, attempt):
    runner = AgentRunner(_LockedWorker())
    task_id, locked = _at_locked_step(runner)
    version = runner.get_task_state(task_id).version
    with pytest.raises(UserError) as refused:
        attempt(runner, task_id, locked)
    assert refused.value.code == "step_action_unsupported"
    assert refused.value.params == {"action": action, "reason": NO_EDIT}
    assert runner.get_task_state(task_id).version == version
    (still,) = runner.get_upcoming_steps(task_id)
    assert still.input == locked.input and not still.edited and still.status == "upcoming"
    assert runner.run_step(task_id).output == "done: {'tool': 't', 'args': {}}"


def test_running_a_locked_step_with_its_own_input_is_not_an_edit():
    runner = AgentRunner(_LockedWorker())
    task_id, locked = _at_locked_step(runner)
    assert runner.run_step(task_id, locked.input).is_last


def test_names_and_limits_survive_a_restart(tmp_path):
    path = tmp_path / "s.db"
    task_id, _ = _at_locked_step(AgentRunner(_LockedWorker(), store=SQLiteStore(path)))
    reloaded = AgentRunner(_LockedWorker(), store=SQLiteStore(path))
    (locked,) = reloaded.get_upcoming_steps(task_id)
    assert locked.name == "second node"
    assert locked.cannot == dict.fromkeys(StepAction, NO_EDIT)
    assert reloaded.get_completed_steps(task_id)[0].task_step.name == "first node"


def test_a_step_failed_by_foreign_code_records_its_traceback(tmp_path, caplog):
    runner = AgentRunner(
        _LockedWorker(fail_with=ValueError("bad state")), store=SQLiteStore(tmp_path / "s.db")
    )
    task_id, _ = _at_locked_step(runner)
    with pytest.raises(StepError) as failed:
        runner.run_step(task_id)
    where = failed.value.params["cause_params"]["traceback"]
    assert "_raise_from_users_code" in where and "ValueError: bad state" in where
    assert "agent_core/runtime" not in where  # The runtime's frames say nothing to the user.
    # The terminal shows it too: the runtime logs it as a warning, which Python prints.
    (logged,) = [r for r in caplog.records if "failed in your code" in r.getMessage()]
    assert logged.levelname == "WARNING" and where.rstrip() in logged.getMessage()
    assert logged.getMessage().startswith("step 2 of task ")
    reloaded = AgentRunner(_LockedWorker(), store=SQLiteStore(tmp_path / "s.db"))
    (step,) = reloaded.get_upcoming_steps(task_id)
    assert step.status == "failed" and step.error_code == "error"
    assert step.error_params["traceback"] == where
    assert reloaded.run_step(task_id).is_last  # Fixed (a new worker): it runs, nothing lost.


def test_the_runtimes_own_errors_record_no_traceback():
    runner = AgentRunner(_LockedWorker(fail_with=UserError("fix the input")))
    task_id, _ = _at_locked_step(runner)
    with pytest.raises(StepError):
        runner.run_step(task_id)
    (step,) = runner.get_upcoming_steps(task_id)
    assert "traceback" not in step.error_params
