"""Issue 20's app fixes: reply limits, estimated tokens, notes and errors on their own cards."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from agent_core.types import StepKind, StepStatus
from components.task_version import CHANGED

from .conftest import stored
from .test_stepper import messages, ok, start_scenario, step_widget

_ITEM = '{"id": "a", "agent": "%s", "prompt": "Write hi to a.txt", "depends_on": []}'


def _plan(agent: str) -> str:
    return '{"plan": [' + _ITEM % agent + "]}"


def test_an_invalid_plan_then_a_valid_one_runs_without_a_stale_tab(
    app: AppTest, db_path: Path
) -> None:
    task = start_scenario(app, "haiku")
    step_widget(app, "input", "text_area").input(_plan("nobody"))
    step_widget(app, "run").click().run()
    ok(app)
    (plan_step,) = stored(db_path, task).step_queue
    assert plan_step.status is StepStatus.FAILED  # the invalid plan was refused...
    assert any("unknown agent 'nobody'" in m for m in messages(app))  # ...and said why
    assert not any("could not be shown" in m for m in messages(app))

    step_widget(app, "input", "text_area").input(_plan("file"))
    step_widget(app, "run").click().run()
    ok(app)

    assert CHANGED not in messages(app)
    state = stored(db_path, task)
    assert [state.steps[s].kind for s in state.completed] == [StepKind.PLAN]
    assert [s.kind for s in state.step_queue] == [StepKind.DELEGATE, StepKind.FINALIZE]
