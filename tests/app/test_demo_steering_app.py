"""The Stepper page with the demo model: steering a call changes the answer the page shows."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from agent_core.demos import ARITHMETIC_TASK

from .conftest import stored
from .test_stepper import click, codes, completed, run_first_step, step_widget, task_id, type_task


def test_an_edited_multiply_changes_the_demo_answer_on_the_page(
    app: AppTest, db_path: Path
) -> None:
    type_task(app, ARITHMETIC_TASK, worker="react", provider="demo", approval=True)
    task = task_id(app)
    run_first_step(app)

    step_widget(app, "args", "text_area").input('{"a": 121, "b": 4}')
    click(app, "Approve and run step")
    click(app, "Run until")  # The model's next step reads 484 and proposes add(484, 42).
    assert '"a": 484' in step_widget(app, "args", "text_area").value
    click(app, "Approve and run step")
    click(app, "Run until")

    state = stored(db_path, task)
    assert completed(state) == ["llm", "tool", "llm", "tool", "llm"]
    assert state.last_output is not None and state.last_output.output == "(121 * 4) + 42 = 526"
    assert "(121 * 4) + 42 = 526" in codes(app)
    assert not any("405" in text for text in codes(app))
