"""The Stepper's graph panel: the DAG as a click-aware component, the selected step's card,
Undo to here, and Compare branches (AppTest; the click itself is driven in Chromium by
tests/e2e/test_dag_click_in_browser.py).

Each test builds a demo task on a SQLite file with a real runner, then draws only the panel
(`render_graph_panel`) in an AppTest and checks the store after a click.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from agent_core.demos import SCENARIOS
from agent_core.runtime.runner import AgentRunner
from agent_core.store import SQLiteStore
from agent_core.types import StepStatus
from stepwise.app.components.graph_panel import selection_key, undo_to_here

TIMEOUT = 30


def _panel(db: str, workspace: str, task_id: str, active: bool) -> None:
    from agent_core.demos import SCENARIOS
    from agent_core.store import SQLiteStore
    from stepwise.app.components.actions import show_notice
    from stepwise.app.components.graph_panel import render_graph_panel

    spec = SCENARIOS["arithmetic"].spec.model_copy(update={"workspace": workspace})
    runner = spec.build_runner(store=SQLiteStore(db))
    show_notice()
    render_graph_panel(runner, runner.get_task_state(task_id), active=active)


class Demo:
    """The arithmetic demo on a SQLite file: the runner the test drives, and the panel."""

    def __init__(self, tmp_path: Path) -> None:
        self.db = str(tmp_path / "panel.db")
        self.workspace = str(tmp_path / "workspace")
        spec = SCENARIOS["arithmetic"].spec.model_copy(update={"workspace": self.workspace})
        self.runner: AgentRunner = spec.build_runner(store=SQLiteStore(self.db))
        self.task_id = self.runner.create_task(SCENARIOS["arithmetic"].task).task_id

    def state(self) -> Any:
        return self.runner.store.load_task(self.task_id)

    def app(self, *, selected: str | None = None, active: bool = True) -> AppTest:
        app = AppTest.from_function(
            _panel, args=(self.db, self.workspace, self.task_id, active), default_timeout=TIMEOUT
        )
        if selected is not None:
            app.session_state[selection_key(self.task_id)] = selected
        return ok(app.run())


def ok(app: AppTest) -> AppTest:
    assert not app.exception, [e.value for e in app.exception]
    return app


def button(app: AppTest, label: str) -> Any:
    (found,) = [b for b in app.button if b.label == label]
    return found


@pytest.fixture
def demo(tmp_path: Path) -> Demo:
    return Demo(tmp_path)


def test_the_graph_is_a_click_component_fed_with_plain_data(demo: Demo) -> None:
    demo.runner.run_step(demo.task_id)

    app = demo.app()

    (graph,) = app.get("component_instance")
    assert graph.proto.component_name.endswith(".stepwise_dag")
    args = json.loads(graph.proto.json_args)
    assert [n["id"] for n in json.loads(args["graph"])["nodes"]] == list(demo.state().steps)
    assert args["selected"] is None
    assert not app.get("iframe")  # A plain iframe cannot send a click back.
    assert [c.value for c in app.caption] == ["Click a step in the graph to open it here."]


def test_a_selected_step_opens_its_card_and_undo_to_here_goes_back_after_it(
    demo: Demo,
) -> None:
    demo.runner.run_until(demo.task_id)
    first, second, third = demo.state().completed

    app = demo.app(selected=first)

    (graph,) = app.get("component_instance")
    assert json.loads(graph.proto.json_args)["selected"] == first  # Drawn selected.
    (card,) = app.expander
    assert card.label.startswith("Step 1 · llm")
    undo = button(app, "Undo to here")
    assert not undo.disabled
    assert undo.help == (
        "Undoes the 2 steps after step 1, newest first: the task goes back to just after step 1."
    )

    ok(undo.click().run())

    state = demo.state()
    assert state.completed == [first]  # One action, two steps undone.
    assert state.steps[second].status is StepStatus.UNDONE
    assert state.steps[third].status is StepStatus.UNDONE
    assert len(state.queue) == 1  # Step 2 is next again, on a new branch.
    assert [t.value for t in app.toast] == ["Went back to just after step 1 (undid 2 steps)."]


@pytest.mark.parametrize(
    ("pick", "active", "reason"),
    [
        ("last", True, "Step 3 is the last step done: nothing after it to undo."),
        ("undone", True, "Step 2 was undone: it is not on the current path."),
        ("first", False, "This task is read only here: its model is not set up (see Settings)."),
    ],
)
def test_undo_to_here_is_disabled_with_the_reason_on_hover(
    demo: Demo, pick: str, active: bool, reason: str
) -> None:
    demo.runner.run_until(demo.task_id)
    first, second, third = demo.state().completed
    if pick == "undone":
        demo.runner.undo_step(demo.task_id, steps=2)
        demo.runner.run_until(demo.task_id)  # Steps 2 and 3 again, on a new branch.
    step_id = {"last": third, "undone": second, "first": first}[pick]

    app = demo.app(selected=step_id, active=active)

    undo = button(app, "Undo to here")
    assert undo.disabled
    assert undo.help == reason
    assert reason in [c.value for c in app.caption]
    assert demo.state().steps[step_id].status is (
        StepStatus.UNDONE if pick == "undone" else StepStatus.COMPLETED
    )


def test_undo_to_here_says_why_when_the_task_is_finished(demo: Demo) -> None:
    demo.runner.run_until(demo.task_id)
    demo.runner.finalize_response(demo.task_id)
    state = demo.state()

    plan = undo_to_here(state, state.completed[0], active=False)

    assert (plan.steps, plan.enabled) == (0, False)
    assert plan.reason == "This task is completed: its steps can no longer be undone."


def test_an_upcoming_step_selected_says_where_it_is(demo: Demo) -> None:
    (upcoming,) = demo.state().queue

    app = demo.app(selected=upcoming)

    assert "This llm step has not run yet: it is under Upcoming steps." in [
        c.value for c in app.caption
    ]
    assert not [b for b in app.button if b.label == "Undo to here"]


def test_close_clears_the_selection(demo: Demo) -> None:
    demo.runner.run_step(demo.task_id)
    (first,) = demo.state().completed

    app = demo.app(selected=first)
    ok(button(app, "Close").click().run())

    assert not app.expander
    assert [c.value for c in app.caption] == ["Click a step in the graph to open it here."]


def test_compare_branches_waits_for_a_rerun_then_shows_both_runs(demo: Demo) -> None:
    demo.runner.run_until(demo.task_id)
    demo.runner.undo_step(demo.task_id, steps=2)

    app = demo.app()
    compare = button(app, "Compare branches")
    assert compare.disabled
    assert compare.help == "Nothing to compare yet: undo a step, then run it again."

    (again,) = demo.state().queue
    demo.runner.edit_step(demo.task_id, again, "Answer now.")
    demo.runner.run_until(demo.task_id)
    app = demo.app()
    ok(button(app, "Compare branches").click().run())

    (runs,) = app.multiselect
    left, right = runs.value
    assert left != right
    assert "(first run)" in runs.format_func(left)
    assert "current" in runs.format_func(right)
    titles = [e.label for e in app.expander]
    assert titles[:2] == [
        # The demo model reads its input now: "Answer now." changes what it said.
        "Step 2 · llm · differs: input as run, output, tokens",
        "Step 3 · llm · differs: tokens",
    ]
    codes = [c.value for c in app.code]
    assert "(no input)" in codes and "Answer now." in codes
