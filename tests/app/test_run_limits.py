"""A task's run limits, shown on the task and raised from the app (issue 22, item 3).

A ReAct agent that keeps calling tools stops after its 10 reasoning steps; the page says so
in its own words (the Limits button, the step by number), and raising the limit to 20 in the
Limits popover lets Run step go on.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from agent_core.types import StepStatus, Task, TaskState, TaskStatus, TaskStep
from stepwise.app.components.messages import describe_data, unplain
from tests.app.conftest import only_task_state
from tests.llm_servers import OpenAIServer, Reply

ACT = 'Thought: I should add again.\nAction: add\nAction Input: {"a": 1, "b": 2}'
_HEX_ID = re.compile(r"\b[0-9a-f]{8,}\b")


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _always_act(_body: dict[str, Any]) -> Reply:
    return Reply(text=ACT)


def _create(app: AppTest, url: str) -> None:
    ok(app.run())
    app.selectbox(key="form-worker").set_value("react")
    app.selectbox(key="form-provider").set_value("openai").run()
    app.text_input(key="form-model-openai").input("loop-model")
    app.text_input(key="form-base-url-openai").input(url)
    app.multiselect(key="form-tools").set_value(["arithmetic"])
    app.text_area(key="form-task").input("Add 1 and 2 until you are told to stop.")
    ok(app.button(key="form-create").click().run())


def _run_step(app: AppTest) -> None:
    buttons = [b for b in app.button if b.key and b.key.startswith("run-")]
    assert buttons, "no Run step button"
    ok(buttons[0].click().run())


def _run_until_failed(app: AppTest, db_path: Path, clicks: int = 40) -> TaskState:
    """Press Run step until a step fails (a click whose step streams on counts again)."""
    for _ in range(clicks):
        _run_step(app)
        state = only_task_state(db_path)
        if state.task.status is TaskStatus.FAILED:
            ok(app.run())  # the page as the person sees it after the failure
            return state
    raise AssertionError(f"no step failed in {clicks} clicks")


def _boxes(app: AppTest) -> list[str]:
    return [unplain(e.value) for e in [*app.error, *app.warning, *app.info, *app.success]]


def test_a_react_task_stopped_at_10_steps_goes_on_once_raised_to_20(
    app: AppTest, db_path: Path
) -> None:
    with OpenAIServer(policy=_always_act) as server:
        _create(app, f"{server.url}/v1")
        state = _run_until_failed(app, db_path)
        assert len(state.completed) == 10  # ReAct runs each add call inside its step
        (failed,) = state.step_queue
        assert (failed.status, failed.error_code) == (StepStatus.FAILED, "max_iterations")
        said = " ".join(_boxes(app))
        assert "Limits button" in said
        assert "max_iterations" not in said and "set_limits" not in said
        assert not _HEX_ID.search(said)
        assert "Limits: 10 / 10 reasoning steps" in _captions(app)
        assert "set_limits" not in " ".join(c.value for c in app.code)  # the runtime's words

        _raise_iterations(app, 20)
        assert only_task_state(db_path).task.limits.max_iterations == 20
        assert "Limits: 10 / 20 reasoning steps" in _captions(app)
        _run_step(app)  # the failed step again: it goes on
        state = only_task_state(db_path)
        assert len(state.completed) == 11
        assert state.task.status is TaskStatus.ACTIVE
        assert "Limits: 11 / 20 reasoning steps" in _captions(app)


def _captions(app: AppTest) -> str:
    return " ".join(c.value for c in app.caption)


def _raise_iterations(app: AppTest, to: int) -> None:
    app.number_input(key="limits-iterations").set_value(to)
    (save,) = [b for b in app.button if b.label == "Save limits"]
    ok(save.click().run())


def test_a_token_bound_set_in_the_limits_popover_refuses_the_next_step_in_the_apps_words(
    app: AppTest, db_path: Path
) -> None:
    ok(app.run())
    ok(app.button(key="scenario-arithmetic").click().run())
    _run_step(app)
    used = only_task_state(db_path).task.usage.total_tokens
    assert used > 0
    app.number_input(key="limits-tokens").set_value(used)
    (save,) = [b for b in app.button if b.label == "Save limits"]
    ok(save.click().run())
    assert f"of {used:,}" in _captions(app)
    _run_step(app)  # refused: the task spent its bound
    assert len(only_task_state(db_path).completed) == 1
    said = " ".join(_boxes(app))
    assert f"This task has spent {used:,} tokens of its bound of {used:,}." in said
    assert "Limits button" in said and "set_limits" not in said


def test_the_words_for_a_step_stopped_by_max_iterations_name_the_button_and_the_number() -> None:
    task = Task(input="loop")
    done = [TaskStep(task_id=task.task_id, input=None, number=n) for n in range(1, 11)]
    failed = TaskStep(task_id=task.task_id, input=None, status=StepStatus.FAILED)
    state = TaskState(
        task=task,
        steps={s.step_id: s for s in [*done, failed]},
        completed=[s.step_id for s in done],
        queue=[failed.step_id],
    )
    failure = {
        "code": "step_failed",
        "message": f"step {failed.step_id} failed: the agent reached max_iterations=10",
        "remedy": "raise_limits",
        "task_id": task.task_id,
        "step_id": failed.step_id,
        "params": {
            "cause_code": "max_iterations",
            "cause_params": {"limit": 10},
            "cause_message": "the agent reached max_iterations=10; set_limits(...)",
        },
    }
    said = describe_data(failure, state)
    assert said.startswith("Step 11 failed: the agent took its limit of 10 reasoning steps")
    assert "Limits button" in said
    assert not _HEX_ID.search(said) and "max_iterations" not in said
