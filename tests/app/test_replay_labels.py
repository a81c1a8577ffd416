"""Replayed tasks in the app's store say so (issue 29): "Replay of case NAME" on the Tasks page
and in the Stepper's header, so a test's run is not taken for the person's own."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from agent_core.store import SQLiteStore
from stepwise.app.components.messages import unplain
from tests.app.test_tests_page import TESTS_PAGE, demo_task, stepper_on, write_cases

TASKS_PAGE = "app_pages/tasks.py"


def captions(app: AppTest) -> str:
    return "\n".join(c.value for c in app.caption)


def replays_of(db_path) -> dict[str, str | None]:
    """Each stored task's `replay_of`, by task id."""
    store = SQLiteStore(db_path)
    try:
        ids = [summary.task_id for summary in store.list_tasks()]
        return {task_id: store.load_task(task_id).task.replay_of for task_id in ids}
    finally:
        store.close()


def test_a_case_run_on_the_tests_page_is_labelled_on_the_tasks_page_and_stepper(
    app, db_path, tmp_path
):
    write_cases(db_path, tmp_path / "stepwise_cases")
    app.run()
    app.switch_page(TESTS_PAGE).run()
    app.button(key="case-good.case.json-run").click().run()
    assert not app.exception
    labels = replays_of(db_path)
    assert sorted(label or "" for label in labels.values()) == ["", "good"]

    app.switch_page(TASKS_PAGE).run()
    assert not app.exception
    text = unplain(captions(app)).splitlines()
    lines = [line for line in text if line.startswith(("Agent", "Replay"))]
    assert sorted(line.partition(" · ")[0] for line in lines) == [
        "Agent: ReAct",  # The task the cases were saved from: the person's own.
        "Replay of case good",
    ], lines

    replayed = next(task_id for task_id, label in labels.items() if label == "good")
    app.switch_page("app_pages/stepper.py")
    stepper_on(app, replayed).run()
    assert not app.exception
    assert "Replay of case good · Status:" in captions(app)


def test_replay_on_current_code_labels_the_new_task_not_the_original(app, db_path):
    task_id = demo_task(db_path)
    app = stepper_on(app, task_id)
    app.run()
    assert "Replay of case" not in captions(app)
    app.button(key="replay-current").click().run()
    assert not app.exception
    labels = replays_of(db_path)
    assert labels[task_id] is None
    assert [label for tid, label in labels.items() if tid != task_id] == [f"task-{task_id[-8:]}"]
