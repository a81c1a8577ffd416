"""The Stepper's threads, forks and conversation edits (issue 22, items 1, 5 and 6), in AppTest.

Each test drives the whole app on a fresh SQLite file and checks the store: a finished task
continued from its page joins its thread; every completed card undoes back to itself (asking
first when it undoes more than one step) and forks a new task that leaves the original
alone; the conversation editor records an edit as a step whose card shows it, and Undo
reverts it.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from streamlit.testing.v1 import AppTest

from agent_core.demos import ARITHMETIC_TASK
from agent_core.types import StepKind, TaskStatus, short_id
from stepwise.app.components.conversation_editor import edit_reason
from stepwise.app.components.messages import describe_data

from .conftest import stored
from .test_stepper import (
    HOSTILE,
    card_titles,
    click,
    codes,
    expander,
    messages,
    ok,
    run_first_step,
    start_scenario,
    task_id,
)


def run_steps(at: AppTest, count: int) -> None:
    for _ in range(count):
        run_first_step(at)


def card(at: AppTest, number: int) -> Any:
    (title,) = [t for t in card_titles(at) if t.startswith(f"Step {number} ·")]
    return expander(at, title)


def card_button(at: AppTest, number: int, label: str) -> Any:
    (found,) = [b for b in card(at, number).button if b.label == label]
    return found


def captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption]


# ----------------------------------------------------------------------- undo to here


def test_undo_to_here_asks_how_many_then_undoes_them_all(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")
    run_steps(app, 3)
    assert len(stored(db_path, task).completed) == 3

    # Two steps follow step 1: the card asks first, and says how many.
    confirm = card_button(app, 1, "Undo 2 steps")
    assert any("Undo the 2 steps after step 1?" in c.value for c in card(app, 1).caption)
    confirm.click().run()
    ok(app)

    state = stored(db_path, task)
    assert [state.steps[s].number for s in state.completed] == [1]
    assert len(state.queue) == 1  # Step 2 is upcoming again, to edit and rerun.
    assert "Undid 2 steps: back to just after step 1." in messages(app)


def test_undo_to_here_undoes_one_step_at_once_and_the_last_card_cannot(
    app: AppTest, db_path: Path
) -> None:
    task = start_scenario(app, "arithmetic")
    run_steps(app, 2)
    last = card_button(app, 2, "Undo to here")
    assert last.disabled and "nothing after it" in last.help

    card_button(app, 1, "Undo to here").click().run()
    ok(app)

    assert len(stored(db_path, task).completed) == 1


# ---------------------------------------------------------------------------------- fork


def test_fork_from_here_opens_a_new_task_and_leaves_the_original(
    app: AppTest, db_path: Path
) -> None:
    original = start_scenario(app, "arithmetic")
    run_steps(app, 3)
    before = stored(db_path, original)

    card_button(app, 2, "Fork from here").click().run()
    ok(app)

    fork = task_id(app)
    assert fork != original
    forked = stored(db_path, fork)
    assert forked.task.forked_from is not None
    assert forked.task.forked_from.task_id == original
    assert forked.task.forked_from.number == 2
    assert len(forked.completed) == 2 and len(forked.queue) == 1
    after = stored(db_path, original)
    assert (after.version, after.completed) == (before.version, before.completed)
    assert f"Forked from task {short_id(original)} at step 2." in captions(app)

    click(app, f"Open task {short_id(original)}")  # The header's link back.
    assert task_id(app) == original


def test_a_finished_task_can_be_forked_but_not_undone(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")
    run_steps(app, 3)
    click(app, "Finalize")

    assert card_button(app, 1, "Undo to here").disabled
    card_button(app, 1, "Fork from here").click().run()
    ok(app)

    forked = stored(db_path, task_id(app))
    assert forked.task.status is TaskStatus.ACTIVE and len(forked.completed) == 1
    assert stored(db_path, task).task.status is TaskStatus.COMPLETED


# -------------------------------------------------------------------- conversation edits


def _open_editor(at: AppTest) -> None:
    at.toggle(key=f"edit-open-{task_id(at)}").set_value(True).run()
    ok(at)


def _editor_area(at: AppTest, name: str) -> Any:
    (found,) = [t for t in at.text_area if t.key and t.key.startswith(f"edit-{name}-")]
    return found


def test_an_edit_of_the_conversation_is_a_step_its_card_shows_and_undo_reverts(
    app: AppTest, db_path: Path
) -> None:
    task = start_scenario(app, "arithmetic")
    run_first_step(app)
    before = stored(db_path, task).task.memory.get_all()
    assert before[0].role == "user" and before[0].content == ARITHMETIC_TASK

    _open_editor(app)
    _editor_area(app, "text-0").input("What is (121 * 4) + 42?")
    _editor_area(app, "added").input(HOSTILE)
    click(app, "Save as a step")

    state = stored(db_path, task)
    edit = state.steps[state.completed[-1]]
    assert (edit.kind, edit.name) == (StepKind.HUMAN, "edit conversation")
    added = [len(before) + 1]
    assert edit.step_state["conversation_edit"] == {"changed": [1], "dropped": [], "added": added}
    edited = state.task.memory.get_all()
    assert edited[0].content == "What is (121 * 4) + 42?" and edited[-1].content == HOSTILE
    # Its card: what changed, before and after, and the added text as text (never markup).
    shown = [c.value for c in card(app, 2).code]
    assert ARITHMETIC_TASK in shown and "What is (121 * 4) + 42?" in shown and HOSTILE in shown
    assert all(HOSTILE not in m.value for m in app.markdown)
    assert any(HOSTILE in text for text in codes(app))  # "What the model sees next" has it.

    click(app, "Undo")

    assert stored(db_path, task).task.memory.get_all() == before


def test_an_edits_card_names_messages_by_the_numbers_the_editor_showed(
    app: AppTest, db_path: Path
) -> None:
    # Dropping message 1 renumbered the rest: the changed last message read as one less.
    task = start_scenario(app, "arithmetic")
    run_first_step(app)
    run_first_step(app)
    before = stored(db_path, task).task.memory.get_all()
    last = len(before)
    assert last >= 3

    _open_editor(app)
    app.checkbox(key=_editor_area(app, "text-0").key.replace("text-0", "drop-0")).check()
    _editor_area(app, f"text-{last - 1}").input("Changed by me.")
    click(app, "Save as a step")

    state = stored(db_path, task)
    assert state.steps[state.completed[-1]].step_state["conversation_edit"]["changed"] == [last]
    said = [c.value for c in card(app, 3).caption]
    assert any(c.startswith(f"Message {last} (") and c.endswith("changed") for c in said), said
    assert any(c.startswith("Message 1 (") and c.endswith("dropped") for c in said), said


def test_an_unchanged_edit_says_what_to_do(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")
    run_first_step(app)
    _open_editor(app)

    click(app, "Save as a step")

    assert len(stored(db_path, task).completed) == 1
    assert any("The edit changed nothing" in m for m in messages(app))


def test_dropping_a_call_without_its_result_is_refused_in_the_apps_words(
    app: AppTest, db_path: Path
) -> None:
    start_scenario(app, "parallel")  # Function calling: calls and results are messages.
    run_first_step(app)
    run_first_step(app)
    state = stored(db_path, task_id(app))
    roles = [m.role for m in state.task.memory.get_all()]
    assert "tool" in roles
    _open_editor(app)
    call = next(i for i, m in enumerate(state.task.memory.get_all()) if m.tool_calls)
    (drop,) = [c for c in app.checkbox if c.key and c.key.startswith(f"edit-drop-{call}-")]
    drop.check()

    click(app, "Save as a step")

    assert len(stored(db_path, task_id(app)).completed) == len(state.completed)
    assert any("keep each tool call together with its result" in m for m in messages(app))


def test_editing_is_greyed_when_the_agent_answered_or_keeps_its_own_conversation() -> None:
    state = SimpleNamespace(queue=["next"])
    framework = SimpleNamespace(agent_worker=SimpleNamespace(keeps_own_conversation="X keeps it"))
    assert "X keeps it" in edit_reason(framework, state, answered=False)  # type: ignore[arg-type]
    ours = SimpleNamespace(agent_worker=SimpleNamespace())
    assert "press Undo" in edit_reason(ours, state, answered=True)  # type: ignore[arg-type]
    assert edit_reason(ours, state, answered=False) == ""  # type: ignore[arg-type]


def test_the_new_codes_name_what_fixes_them() -> None:
    said = {
        code: describe_data({"code": code, "message": "m.", "params": params})
        for code, params in {
            "thread_not_finished": {"status": "active"},
            "fork_point_not_completed": {},
            "conversation_not_editable": {"reason": "LangGraph keeps it"},
            "edit_after_finish": {"finished_at": 3},
            "conversation_unchanged": {},
        }.items()
    }
    assert "press Finalize" in said["thread_not_finished"]
    assert "Fork from here" in said["fork_point_not_completed"]
    assert "(LangGraph keeps it)" in said["conversation_not_editable"]
    assert "at step 3" in said["edit_after_finish"] and "Undo" in said["edit_after_finish"]
    assert "Save as a step" in said["conversation_unchanged"]


# ----------------------------------------------------------------------------- threads


def test_continue_this_conversation_starts_a_task_in_the_same_thread(
    app: AppTest, db_path: Path
) -> None:
    earlier = start_scenario(app, "arithmetic")
    run_steps(app, 3)
    click(app, "Finalize")
    history = stored(db_path, earlier).task.memory.get_all()

    click(app, "Continue this conversation")
    assert app.session_state["stepwise.task_id"] is None
    assert any(f"task **{short_id(earlier)}**" in m.value for m in app.markdown)
    app.text_area(key="continue-task").input("And times 2?")
    click(app, "Create task")

    follow = task_id(app)
    state = stored(db_path, follow)
    assert state.task.thread_id == earlier and state.task.input == "And times 2?"
    assert state.task.memory.get_all() == history
    said = [c for c in captions(app) if c.startswith("Continues the conversation")]
    assert said and f"task {short_id(earlier)}" in said[0]
    assert stored(db_path, earlier).task.status is TaskStatus.COMPLETED


def test_an_unfinished_task_offers_no_continue(app: AppTest) -> None:
    start_scenario(app, "arithmetic")
    run_first_step(app)
    assert not [b for b in app.button if b.label == "Continue this conversation"]
