"""The Tasks page: list, open, delete, export and import tasks, through the real app and store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from agent_core import AgentRunner
from agent_core.llms import ChatMessage, ScriptedLLM
from agent_core.llms.base import ChatResponse, Usage
from agent_core.store import InMemoryStore, SQLiteStore
from agent_core.trace import TRACE_FORMAT, import_trace
from agent_core.types import TaskStatus, short_id
from agent_core.workers import ReActAgentWorker
from stepwise.app.components.task_list import PAGE_SIZE

HOSTILE = "<img src=x onerror=alert(1)>"
TASK_STATE_KEY = "stepwise.task_id"


def _runner(db_path: Path, *replies: str | ChatResponse) -> AgentRunner:
    worker = ReActAgentWorker.from_tools([], llm=ScriptedLLM(list(replies)))
    return AgentRunner(worker, store=SQLiteStore(db_path))


def _paid_answer(text: str) -> ChatResponse:
    return ChatResponse(
        message=ChatMessage(role="assistant", content=f"Thought: done.\nAnswer: {text}"),
        usage=Usage(prompt_tokens=1000, completion_tokens=234, cost_usd=0.0123),
    )


def _make_task(db_path: Path, text: str, *, run: bool = True) -> str:
    """A task in the app's database, made through the runtime (one step run, if `run`)."""
    runner = _runner(db_path, _paid_answer("42"))
    task_id = runner.create_task(text).task_id
    if run:
        runner.run_step(task_id)
    return task_id


def _tasks_page(app: AppTest) -> AppTest:
    app.run()
    app.switch_page("app_pages/tasks.py").run()
    assert not app.exception, app.exception
    return app


def _row_captions(app: AppTest) -> list[str]:
    return [c.value for c in app.caption if " · id " in c.value]


def _stepper_shows(app: AppTest, text: str) -> bool:
    """Whether the stepper page is on screen with `text` (a task input) on it as plain text."""
    on_stepper = any(b.label == "Undo" for b in app.button)
    shown = [e.value for e in (*app.code, *app.text, *app.subheader)]
    return on_stepper and any(text in value for value in shown)


def open_popover(app: AppTest, key: str) -> None:
    """Open the popover drawn under `key` (one whose content is drawn only while open)."""
    app.session_state[key] = True
    app.run()


def _open_buttons(app: AppTest) -> list[str]:
    return [b.key.removeprefix("open-") for b in app.button if (b.key or "").startswith("open-")]


@pytest.fixture
def deferred_downloads(monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[str, Callable]]:
    """What each deferred download button would serve: {file name: (mime, callable)}."""
    served: dict[str, tuple[str, Callable]] = {}
    real = MediaFileManager.add_deferred

    def record(self, data_callable, mimetype, coordinates, file_name=None, **kwargs: Any):
        served[file_name or ""] = (mimetype or "", data_callable)
        return real(self, data_callable, mimetype, coordinates, file_name=file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", record)
    return served


def test_tasks_show_status_steps_tokens_and_cost(app, db_path):
    ran = _make_task(db_path, "What is six times seven?")
    waiting = _make_task(db_path, "A task left waiting", run=False)
    _runner(db_path).abandon_task(waiting)

    captions = _row_captions(_tasks_page(app))

    assert len(captions) == 2
    ran_line = next(c for c in captions if short_id(ran) in c)
    assert ran_line.startswith("active · 1 step done · 0 upcoming · 1,234 tokens · $0.0123")
    waiting_line = next(c for c in captions if short_id(waiting) in c)
    # No model ran: no cost at all (a priced run shows dollars, an unpriced one "cost unknown").
    assert waiting_line.startswith("abandoned · 0 steps done · 1 upcoming · 0 tokens · updated ")
    assert {t.value for t in app.text} >= {"What is six times seven?", "A task left waiting"}


def test_an_empty_store_says_how_to_get_tasks(app):
    _tasks_page(app)
    assert any("No tasks yet" in c.value for c in app.caption)
    assert app.get("download_button") == []


def test_open_shows_that_task_in_the_stepper(app, db_path):
    _make_task(db_path, "Another task")
    wanted = _make_task(db_path, "The task to open")
    _tasks_page(app)

    app.button(key=f"open-{wanted}").click().run()

    assert not app.exception
    assert app.session_state[TASK_STATE_KEY] == wanted
    assert _stepper_shows(app, "The task to open")


def test_delete_after_confirming_removes_only_that_task(app, db_path):
    kept = _make_task(db_path, "Keep me")
    doomed = _make_task(db_path, "Delete me")
    _tasks_page(app)
    app.session_state[TASK_STATE_KEY] = doomed  # It is also the task the stepper shows.

    # The confirming button sits inside the Delete popover, drawn only once it is open.
    popovers = [p for p in app.get("popover") if p.proto.popover.label == "Delete"]
    assert len(popovers) == 2 and not [b for p in popovers for b in p.button]
    open_popover(app, f"delete-{doomed}")
    popovers = [p for p in app.get("popover") if p.proto.popover.label == "Delete"]
    assert {b.key for p in popovers for b in p.button} == {f"delete-confirm-{doomed}"}
    app.button(key=f"delete-confirm-{doomed}").click().run()

    assert not app.exception
    assert _open_buttons(app) == [kept]
    assert [t.task_id for t in SQLiteStore(db_path).list_tasks()] == [kept]
    assert app.session_state[TASK_STATE_KEY] is None
    assert any(f"Deleted task {short_id(doomed)}" in t.value for t in app.toast)


def test_export_serves_the_task_trace_as_json(app, db_path, deferred_downloads):
    task_id = _make_task(db_path, HOSTILE)
    _tasks_page(app)

    mime, build = deferred_downloads[f"stepwise-task-{short_id(task_id)}.json"]
    document = json.loads(build())

    assert mime == "application/json"
    assert document["format"] == TRACE_FORMAT
    assert document["task"]["task"]["task_id"] == task_id
    assert document["task"]["task"]["input"] == HOSTILE
    # The file is a trace the importer accepts, with the steps the task ran.
    store = InMemoryStore()
    copy = store.load_task(import_trace(json.dumps(document), store))
    assert copy is not None
    assert [o.output for o in copy.completed_steps] == ["42"]


def test_importing_an_exported_trace_opens_a_new_read_only_task(app, db_path, deferred_downloads):
    original = _make_task(db_path, "Export me")
    _tasks_page(app)
    trace = deferred_downloads[f"stepwise-task-{short_id(original)}.json"][1]()

    app.file_uploader(key="trace-upload").upload("trace.json", trace.encode(), "application/json")
    app.run()
    app.button(key="trace-import").click().run()

    assert not app.exception
    imported = app.session_state[TASK_STATE_KEY]
    assert imported not in (None, original)
    assert _stepper_shows(app, "Export me")
    assert any("read only" in t.value for t in app.toast)
    tasks = {t.task_id: t for t in SQLiteStore(db_path).list_tasks()}
    assert set(tasks) == {original, imported}
    assert tasks[imported].status is TaskStatus.ACTIVE  # It keeps its status, read only.
    assert tasks[imported].imported
    assert tasks[imported].steps_completed == 1
    # Back on the list, the imported task is the newest row.
    app.switch_page("app_pages/tasks.py").run()
    assert _open_buttons(app)[0] == imported


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{not json", "not valid JSON"),
        (json.dumps({"format": "<b>**x**</b>", "version": 1}).encode(), "'<b>**x**</b>'"),
    ],
)
def test_a_bad_trace_file_shows_why_as_plain_text(app, db_path, content, reason):
    _make_task(db_path, "Already here")
    _tasks_page(app)

    app.file_uploader(key="trace-upload").upload("bad.json", content, "application/json")
    app.run()
    app.button(key="trace-import").click().run()

    assert not app.exception
    assert [e.value for e in app.error] == ["The trace could not be imported."]
    assert any(reason in c.value for c in app.code)
    assert len(SQLiteStore(db_path).list_tasks()) == 1


def test_import_button_waits_for_a_file(app):
    _tasks_page(app)
    assert app.button(key="trace-import").disabled


def test_hostile_task_input_is_shown_as_text_not_markup(app, db_path):
    _make_task(db_path, HOSTILE)
    _tasks_page(app)

    assert HOSTILE in [t.value for t in app.text]
    rendered = [m.value for m in (*app.markdown, *app.caption, *app.error, *app.success)]
    assert not any("onerror" in value for value in rendered)


def test_long_lists_show_the_latest_page_then_all_and_filter_by_status(app, db_path):
    runner = _runner(db_path)
    ids = [runner.create_task(f"task number {i}").task_id for i in range(55)]
    for task_id in ids[:3]:
        runner.abandon_task(task_id)
    _tasks_page(app)

    assert len(_open_buttons(app)) == PAGE_SIZE < 55
    assert set(_open_buttons(app)) >= set(ids[:3])  # Abandoning them made them the latest.
    app.toggle(key="tasks-show-all").set_value(True).run()
    assert len(_open_buttons(app)) == 55

    app.selectbox(key="tasks-status").set_value("abandoned").run()
    assert sorted(_open_buttons(app)) == sorted(ids[:3])
    app.selectbox(key="tasks-status").set_value("all").run()
    app.text_input(key="tasks-query").input("NUMBER 54").run()
    assert _open_buttons(app) == [ids[54]]
    app.text_input(key="tasks-query").input("nothing like this").run()
    assert any("No task matches" in c.value for c in app.caption)


def test_a_damaged_task_is_listed_as_damaged_and_deletes(app, db_path):
    import sqlite3

    kept = _make_task(db_path, "Keep me")
    damaged = _make_task(db_path, "Damaged")
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE tasks SET status = 'exploded' WHERE task_id = ?", (damaged,))
    _tasks_page(app)

    assert not app.exception
    assert sorted(_open_buttons(app)) == sorted([kept, damaged])  # The others still list.
    assert any("cannot be read" in c.value for c in app.caption)  # Says why, and what to do.
    open_popover(app, f"delete-{damaged}")
    app.button(key=f"delete-confirm-{damaged}").click().run()
    assert not app.exception
    assert [t.task_id for t in SQLiteStore(db_path).list_tasks()] == [kept]
