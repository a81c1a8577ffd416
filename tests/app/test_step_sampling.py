"""Sample N on the Stepper: the upcoming model step's replies grouped, and going on with one."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from agent_core.demos import ARITHMETIC_TASK

from .conftest import stored
from .test_stepper import click, codes, completed, task_id, type_task


def _markdown(app: AppTest) -> list[str]:
    return [m.value for m in app.markdown]


def test_sample_n_shows_the_groups_and_continue_runs_the_step_with_the_chosen_reply(
    app: AppTest, db_path: Path
) -> None:
    type_task(app, ARITHMETIC_TASK, worker="react", provider="demo", approval=True)
    task = task_id(app)
    app.number_input(key=next(k for k in _keys(app) if k.startswith("sample-n-"))).set_value(3)

    click(app, "Sample N")

    assert any("**100%** (3 of 3) replies:" in text for text in _markdown(app))
    assert any("multiply" in text for text in codes(app))
    assert completed(stored(db_path, task)) == []  # A sample commits nothing.

    click(app, "Continue with this")

    state = stored(db_path, task)
    assert completed(state) == ["llm"]
    assert state.steps[state.completed[0]].status.value == "completed"


def _keys(app: AppTest) -> list[str]:
    return [w.key for w in app.number_input if w.key]
