"""The Stepper's edges: breakpoints shown and cleared, controls that say why they cannot work,
confirmations before a dead end, "you are the model" refusals, and two tabs on one task.

Each test drives the real app (`app.py`) on a fresh SQLite file and checks what the page shows
and what the store holds afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from agent_core import ParallelAgentRunner
from agent_core.effects import IrreversibleEffect
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore, TaskChange
from agent_core.trace import export_trace, import_trace
from agent_core.types import StepKind, StepStatus, TaskStatus
from stepwise.app.components import step_editor
from stepwise.app.components.task_version import CHANGED

from .conftest import stored

TASK_KEY = "stepwise.task_id"
"""Where stepwise/app/components/state.py keeps the current task id in session state."""


# ----------------------------------------------------------------------------- helpers


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown_text(at: AppTest) -> str:
    """Every piece of text the page shows: boxes, toasts, captions, plain text and code."""
    kinds = ("markdown", "caption", "text", "code", "warning", "error", "info", "success", "toast")
    text = "\n".join(str(getattr(e, "value", "")) for kind in kinds for e in at.get(kind))
    return re.sub(r"\\([^\w\s])", r"\1", text)  # Markdown escapes (messages.plain) undone.


def button(at: AppTest, label: str) -> Any:
    (found,) = [b for b in at.button if b.label == label]
    return found


def click(at: AppTest, label: str) -> AppTest:
    button(at, label).click().run()
    return ok(at)


def step_widget(at: AppTest, prefix: str, kind: str = "button", index: int = 0) -> Any:
    widgets = [w for w in getattr(at, kind) if w.key and w.key.startswith(f"{prefix}-")]
    assert len(widgets) > index, f"no {kind} keyed {prefix}-… (have {len(widgets)})"
    return widgets[index]


def popover(at: AppTest, key: str) -> Any:
    """The popover block keyed `key` (its proto holds label, help and disabled)."""
    found = [p for p in at.get("popover") if p.proto.id.endswith(f"-{key}")]
    assert len(found) == 1, f"{len(found)} popovers keyed {key}"
    return found[0].proto.popover


def start_scenario(at: AppTest, name: str) -> str:
    ok(at.run())
    at.button(key=f"scenario-{name}").click().run()
    return task_of(ok(at))


def task_of(at: AppTest) -> str:
    value = at.session_state[TASK_KEY]
    assert isinstance(value, str)
    return value


def open_task(make_app: Callable[[], AppTest], task: str) -> AppTest:
    """Another tab (a new session) showing `task`."""
    tab = make_app()
    tab.session_state[TASK_KEY] = task
    return ok(tab.run())


def card_titles(at: AppTest) -> list[str]:
    return [e.label for e in at.expander if e.label.startswith("Step ")]


def human_task(at: AppTest, question: str = "What is 2 + 3?") -> str:
    """A task in "you are the model" mode."""
    at.run()
    at.selectbox(key="form-provider").set_value("human")
    at.text_area(key="form-task").input(question)
    click(at, "Create task")
    return task_of(at)


# ----------------------------------------------------------------------------- breakpoints


def test_the_breakpoints_button_names_them_and_clear_removes_them(app: AppTest) -> None:
    start_scenario(app, "arithmetic")
    assert popover(app, "bp-popover").label == "Breakpoints"
    assert button(app, "Clear breakpoints").disabled

    app.text_input(key="bp-tool").input("add")
    app.number_input(key="bp-step").set_value(4).run()

    assert popover(ok(app), "bp-popover").label == "Breakpoints: before add, at step 4"
    click(app, "Clear breakpoints")
    assert popover(app, "bp-popover").label == "Breakpoints"
    assert app.text_input(key="bp-tool").value == ""
    assert app.number_input(key="bp-step").value == 0


def test_a_breakpoint_name_is_not_markdown_on_the_button(app: AppTest) -> None:
    start_scenario(app, "arithmetic")
    app.text_input(key="bp-tool").input("**x** [a](b)").run()

    assert popover(ok(app), "bp-popover").label == "Breakpoints: before a named tool"


def test_stop_at_step_means_that_step_and_stops_there_once(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")  # three reasoning steps: multiply, add, answer
    app.number_input(key="bp-step").set_value(1).run()

    click(app, "Run until")
    assert len(stored(db_path, task).completed) == 1
    assert "Step 1 has already run" in shown_text(app)  # the popover says it is behind

    click(app, "Run until")  # past step 1, and it does not stop there again: to the answer
    assert len(stored(db_path, task).completed) == 3


def test_continue_is_one_resumed_run_until(app: AppTest, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    start_until = ParallelAgentRunner.start_until

    def spy(self: ParallelAgentRunner, task_id: str, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return start_until(self, task_id, **kwargs)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the page ran run_until itself")

    monkeypatch.setattr(ParallelAgentRunner, "start_until", spy)
    monkeypatch.setattr(ParallelAgentRunner, "run_until", refuse)
    start_scenario(app, "arithmetic")
    app.text_input(key="bp-tool").input("add").run()

    click(app, "Run until")
    click(app, "Run until")

    assert [c["resume"] for c in calls] == [True, True]


# ----------------------------------------------------------------------------- disabled controls


def test_controls_that_cannot_work_say_why(app: AppTest) -> None:
    start_scenario(app, "arithmetic")
    undo = button(app, "Undo")
    assert undo.disabled and "Nothing to undo" in undo.help

    click(app, "Run until")  # to the answer: nothing queued

    for label in ("Run ready steps", "Run until"):
        control = button(app, label)
        assert control.disabled, label
        assert "Nothing queued" in control.help and "Finalize" in control.help, label
    assert not button(app, "Finalize").disabled


def test_run_step_on_a_step_waiting_for_others_is_disabled(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "parallel")
    step_widget(app, "run").click().run()
    queued = stored(db_path, task).step_queue
    assert [s.kind for s in queued] == [StepKind.TOOL, StepKind.TOOL, StepKind.LLM]

    runs = [b for b in app.button if b.key and b.key.startswith("run-")]
    assert [b.disabled for b in runs] == [False, False, True]
    waiting = runs[2]
    assert "the multiply call" in waiting.help and "the add call" in waiting.help
    assert "Run ready steps" in waiting.help


def test_undo_on_an_imported_task_is_disabled_with_the_reason(
    app: AppTest, db_path: Path, make_app: Callable[[], AppTest]
) -> None:
    task = start_scenario(app, "arithmetic")
    step_widget(app, "run").click().run()
    store = SQLiteStore(db_path)
    copy = import_trace(export_trace(store.load_task(task)), store)  # type: ignore[arg-type]
    store.close()

    tab = open_task(make_app, copy)

    undo = button(tab, "Undo")
    assert undo.disabled and "read only" in undo.help
    assert button(tab, "Run until").disabled
    assert len(card_titles(tab)) == 1


# ----------------------------------------------------------------------------- skip, abandon


def test_skipping_the_only_step_asks_first_and_undo_brings_it_back(
    app: AppTest, db_path: Path
) -> None:
    task = start_scenario(app, "arithmetic")
    (first,) = stored(db_path, task).queue

    step_widget(app, "skip").click().run()

    assert "Nothing would be left to run" in shown_text(ok(app))
    assert stored(db_path, task).queue == [first]  # nothing skipped yet
    click(app, "Skip anyway")

    state = stored(db_path, task)
    assert state.queue == [] and state.steps[first].status is StepStatus.SKIPPED
    assert any("skipped" in title for title in card_titles(app))
    assert not button(app, "Undo").disabled
    click(app, "Undo")
    state = stored(db_path, task)
    assert len(state.queue) == 1 and state.step_queue[0].kind is StepKind.LLM


def test_keep_it_cancels_the_skip(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")
    step_widget(app, "skip").click().run()

    click(app, "Keep it")

    assert len(stored(db_path, task).queue) == 1
    assert "Nothing would be left to run" not in shown_text(app)


def test_skipping_one_of_several_steps_needs_no_confirmation(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "parallel")
    step_widget(app, "run").click().run()

    step_widget(app, "skip").click().run()

    state = stored(db_path, task)
    assert len(state.queue) == 2
    assert sum(s.status is StepStatus.SKIPPED for s in state.steps.values()) == 1


def test_abandon_asks_for_confirmation(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")
    assert popover(app, "abandon").label == "Abandon"
    assert stored(db_path, task).task.status is TaskStatus.ACTIVE

    click(app, "Abandon for good")

    assert stored(db_path, task).task.status is TaskStatus.ABANDONED
    assert not [b for b in app.button if b.label == "Abandon for good"]


# ----------------------------------------------------------------------------- feedback


def test_after_the_answer_feedback_is_not_offered(app: AppTest) -> None:
    start_scenario(app, "arithmetic")

    click(app, "Run until")

    assert not [b for b in app.button if b.label == "Add feedback"]
    assert any("The agent answered" in i.value and "Finalize" in i.value for i in app.info)


def test_refused_feedback_keeps_the_typed_text(
    app: AppTest, db_path: Path, make_app: Callable[[], AppTest]
) -> None:
    task = start_scenario(app, "arithmetic")
    other = open_task(make_app, task)
    step_widget(other, "run").click().run()  # the other tab moves the task on

    app.text_input(key="feedback-text").input("Check the product.")
    click(app, "Add feedback")

    assert CHANGED in shown_text(app)
    assert stored(db_path, task).completed_steps[-1].task_step.kind is StepKind.LLM
    assert app.text_input(key="feedback-text").value == "Check the product."
    click(app, "Add feedback")  # the page now shows the task as it is: this one goes in
    state = stored(db_path, task)
    assert state.completed_steps[-1].task_step.kind is StepKind.HUMAN
    assert app.text_input(key="feedback-text").value == ""


# ----------------------------------------------------------------------------- you are the model


def test_you_are_the_model_refuses_an_empty_reply_and_changes_nothing(
    app: AppTest, db_path: Path
) -> None:
    task = human_task(app)
    before = stored(db_path, task)

    step_widget(app, "run").click().run()

    assert any("Type the model's reply first" in w.value for w in ok(app).warning)
    after = stored(db_path, task)
    assert after.task.status is TaskStatus.ACTIVE
    (step,) = after.step_queue
    assert (step.status, step.attempts, step.error) == (StepStatus.UPCOMING, 0, None)
    assert after.version == before.version


def test_you_are_the_model_disables_the_runs_that_cannot_read_a_reply(app: AppTest) -> None:
    human_task(app)

    for label in ("Run until", "Run ready steps"):
        control = button(app, label)
        assert control.disabled and "Run step" in control.help, label


# ----------------------------------------------------------------------------- two tabs


def _run_step(tab: AppTest) -> None:
    step_widget(tab, "run").click().run()


def _save(tab: AppTest) -> None:
    step_widget(tab, "input", "text_area").input("Just add 1 and 2.")
    step_widget(tab, "save").click().run()


def _skip(tab: AppTest) -> None:
    step_widget(tab, "skip").click().run()
    click(tab, "Skip anyway")


def _feedback(tab: AppTest) -> None:
    tab.text_input(key="feedback-text").input("Check it.")
    click(tab, "Add feedback")


STALE_ACTIONS: dict[str, Callable[[AppTest], Any]] = {
    "run step": _run_step,
    "run until": lambda tab: click(tab, "Run until"),
    "undo": lambda tab: click(tab, "Undo"),
    "abandon": lambda tab: click(tab, "Abandon for good"),
    "skip": lambda tab: step_widget(tab, "skip").click().run(),
    "save": _save,
    "add feedback": _feedback,
}


@pytest.mark.parametrize("action", list(STALE_ACTIONS))
def test_a_stale_tab_refuses_to_act_and_shows_the_task_as_it_is(
    app: AppTest, db_path: Path, make_app: Callable[[], AppTest], action: str
) -> None:
    task = start_scenario(app, "arithmetic")
    _run_step(app)  # one step done, so Undo has something to undo
    stale = open_task(make_app, task)
    _run_step(app)  # the first tab moves on: the second still shows one step
    before = stored(db_path, task)
    assert len(card_titles(stale)) == 1

    STALE_ACTIONS[action](stale)

    assert CHANGED in shown_text(ok(stale))
    after = stored(db_path, task)
    assert after.version == before.version
    assert after.task.status is TaskStatus.ACTIVE
    assert len(card_titles(stale)) == 2  # it now shows the task as it is


def test_a_stale_tab_keeps_the_text_just_typed(
    app: AppTest, make_app: Callable[[], AppTest]
) -> None:
    task = start_scenario(app, "arithmetic")
    stale = open_task(make_app, task)
    _run_step(app)  # The other tab runs the step this one is about to steer.
    typed = "Multiply 121 by 4 <b>instead</b>."
    step_widget(stale, "input", "text_area").input(typed)

    _run_step(stale)

    assert CHANGED in shown_text(ok(stale))
    assert typed in [c.value for c in stale.code]  # Kept to copy back, shown as typed.
    click(stale, "Dismiss")
    assert typed not in [c.value for c in stale.code]


@pytest.mark.parametrize("label", ["Approve and run step", "Reject"])
def test_a_stale_tab_cannot_approve_or_reject(
    app: AppTest, db_path: Path, make_app: Callable[[], AppTest], label: str
) -> None:
    app.run()
    app.selectbox(key="form-worker").set_value("react")
    app.checkbox(key="form-approval").check()
    app.text_area(key="form-task").input("What is (121 * 3) + 42?")
    click(app, "Create task")
    task = task_of(app)
    _run_step(app)  # queues the multiply call, awaiting approval
    stale = open_task(make_app, task)
    click(app, "Undo")  # the first tab goes back: the call is no longer there
    version = stored(db_path, task).version

    click(stale, label)

    assert CHANGED in shown_text(stale)
    assert stored(db_path, task).version == version


def test_a_stale_tab_cannot_finalize(
    app: AppTest, db_path: Path, make_app: Callable[[], AppTest]
) -> None:
    task = start_scenario(app, "arithmetic")
    click(app, "Run until")  # to the answer
    stale = open_task(make_app, task)
    click(app, "Undo")

    click(stale, "Finalize")

    assert CHANGED in shown_text(stale)
    assert stored(db_path, task).task.status is TaskStatus.ACTIVE


# ----------------------------------------------------------------------------- run ready, preview


def test_run_ready_steps_says_what_it_ran(app: AppTest) -> None:
    start_scenario(app, "parallel")
    step_widget(app, "run").click().run()

    click(app, "Run ready steps")

    assert "Ran steps 2 and 3: multiply, add." in shown_text(app)


def test_run_ready_steps_runs_a_tool_call_with_the_arguments_typed_into_it(
    app: AppTest, db_path: Path
) -> None:
    """Issue 32 item 4: an edit typed into the Arguments box was dropped without a word."""
    task = start_scenario(app, "parallel")
    step_widget(app, "run").click().run()
    step_widget(app, "args", kind="text_area").input('{"a": 5, "b": 5}')

    click(app, "Run ready steps")

    state = stored(db_path, task)
    first = state.completed_steps[1]
    assert first.task_step.edited and first.task_step.input["args"] == {"a": 5, "b": 5}
    assert [c.content for c in first.tool_calls] in (["25"], ["10"])


def test_what_the_model_sees_next_is_the_runtime_preview_of_that_step(
    app: AppTest, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Any, ...]] = []
    preview = ParallelAgentRunner.preview_messages

    def spy(self: ParallelAgentRunner, *args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return preview(self, *args, **kwargs)

    monkeypatch.setattr(ParallelAgentRunner, "preview_messages", spy)
    task = start_scenario(app, "arithmetic")
    (step,) = stored(db_path, task).queue

    # The input is what the step's box holds now (an edit not yet saved shows in the preview).
    assert (task, step) in [call[:2] for call in calls]
    assert not hasattr(step_editor, "next_prompt")  # the page builds no prompt of its own


# ----------------------------------------------------------------------------- speed


def test_older_cards_are_built_only_when_asked_for(app: AppTest, db_path: Path) -> None:
    store = SQLiteStore(db_path)
    runner = AgentSpec().build_runner(store=store)
    task = runner.create_task("A long task.").task_id
    for n in range(25):
        runner.add_feedback(task, f"note {n}")
    store.close()
    app.session_state[TASK_KEY] = task
    ok(app.run())
    assert len(card_titles(app)) == 10

    click(app, "Show 10 older steps")
    titles = card_titles(app)
    assert len(titles) == 20 and titles[-1].startswith("Step 6 ")
    click(app, "Show 5 older steps")
    assert len(card_titles(app)) == 25
    assert not [b for b in app.button if b.key == "show-more"]


def test_undo_says_what_a_tool_did_that_it_could_not_undo(
    app: AppTest, db_path: Path, make_app: Callable[[], AppTest]
) -> None:
    """Issue 32: undoing a call that cannot be undone said only "Undid the last step."."""
    task = start_scenario(app, "arithmetic")
    step_widget(app, "run").click().run()
    store = SQLiteStore(db_path)
    try:
        state = store.load_task(task)
        assert state is not None
        output = state.outputs[state.completed[-1]]
        output.effects = [IrreversibleEffect(tool="send_mail", description="sent to bob")]
        store.commit(TaskChange(state=state, base_version=state.version, outputs=[output]))
    finally:
        store.close()
    st.cache_resource.clear()  # A restart: the runners read the task as stored now.
    tab = open_task(make_app, task)

    click(tab, "Undo")

    said = shown_text(tab)
    assert "Undid step 1 in the task, but not in the world" in said
    assert "send_mail cannot be undone: sent to bob" in said
