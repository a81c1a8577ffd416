"""The Tasks page labels tasks honestly: agent and model, imported copies, files Delete removes.

Every test drives the real app on a fresh SQLite file (see conftest.py) and makes its tasks
through the runtime, as the Stepper page would.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from agent_core.llms import ScriptedLLM
from agent_core.runtime.runner import AgentRunner
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.task_files import workspace_folder
from agent_core.trace import export_trace, import_trace
from agent_core.types import TaskStatus
from agent_core.workers import ReActAgentWorker
from stepwise.app.components.messages import unplain

DEMO_LINE = "Agent: ReAct · Model: Demo model — scripted replies, not a real LLM"


def _tasks_page(app: AppTest) -> AppTest:
    app.run()
    app.switch_page("app_pages/tasks.py").run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def _open_buttons(app: AppTest) -> list[str]:
    keys = [b.key or "" for b in app.button]
    return [key.removeprefix("open-") for key in keys if key.startswith("open-")]


def _row_texts(app: AppTest) -> list[str]:
    """Each line of the rows' captions (a row's one caption holds its status and agent lines)."""
    return [line for c in app.caption for line in unplain(c.value).splitlines()]


def _spec_task(
    db_path: Path, spec: AgentSpec, text: str, *, api_key: str | None = None
) -> tuple[AgentRunner, str]:
    runner = spec.build_runner(store=SQLiteStore(db_path), api_key=api_key)
    return runner, runner.create_task(text).task_id


def _scripted(db_path: Path, *replies: str) -> AgentRunner:
    worker = ReActAgentWorker.from_tools([], llm=ScriptedLLM(list(replies)))
    return AgentRunner(worker, store=SQLiteStore(db_path))


def test_each_row_names_its_agent_and_model(app, db_path):
    _spec_task(db_path, AgentSpec(worker="react"), "A demo task")
    openai = AgentSpec(provider="openai", model="gpt-4o-mini", worker="function_calling")
    _spec_task(db_path, openai, "A real model task", api_key="sk-test")

    texts = _row_texts(_tasks_page(app))

    assert DEMO_LINE in texts
    assert "Agent: Function calling · Model: OpenAI / compatible · gpt-4o-mini" in texts


def test_counts_agree_and_a_task_that_used_no_model_shows_no_cost(app, db_path):
    runner = _scripted(db_path)
    runner.create_task("Nothing ran")

    (caption,) = [c.value for c in _tasks_page(app).caption if " · id " in c.value]

    assert caption.startswith("active · 0 steps done · 1 upcoming · 0 tokens · updated ")
    assert "cost" not in caption


def test_an_imported_active_task_keeps_its_status_and_carries_a_read_only_badge(
    app, make_app, db_path
):
    _, original = _spec_task(db_path, AgentSpec(worker="react"), "Export me")
    store = SQLiteStore(db_path)
    loaded = store.load_task(original)
    assert loaded is not None and loaded.task.status is TaskStatus.ACTIVE
    imported = import_trace(export_trace(loaded), store)

    app = _tasks_page(app)

    badges = [m.value for m in app.markdown if "imported, read only" in m.value]
    assert len(badges) == 1  # Only the copy: the original is not imported.
    captions = {
        task_id: next(c.value for c in app.caption if f"id {task_id[-8:]}" in c.value)
        for task_id in (original, imported)
    }
    assert captions[imported].startswith("active · ")
    assert not any("abandoned" in c.value for c in app.caption)
    # After a reload (a new session), the copy is still marked.
    reloaded = _tasks_page(make_app())
    assert len([m for m in reloaded.markdown if "imported, read only" in m.value]) == 1


def test_delete_says_it_also_deletes_the_task_files_and_does(app, db_path):
    runner, task_id = _spec_task(db_path, AgentSpec(worker="react"), "A task with files")
    _, empty_id = _spec_task(db_path, AgentSpec(worker="react"), "A task without files")
    folder = workspace_folder(runner.get_task(task_id))
    assert folder is not None
    (folder / "notes").mkdir(parents=True)
    (folder / "haiku.txt").write_text("Soft wool on the wind")
    (folder / "notes" / "todo.md").write_text("- draw")
    (folder / "index.html").write_text("<p>x</p>")

    app = _tasks_page(app)
    for task in (task_id, empty_id):  # Each Delete popover is drawn once it is open.
        app.session_state[f"delete-{task}"] = True
    app.run()

    notes = {
        key.removeprefix("delete-confirm-"): popover.caption[0].value
        for popover in app.get("popover")
        for key in (b.key or "" for b in popover.button)
        if key.startswith("delete-confirm-")
    }
    assert "also deletes its 3 files" in notes[task_id]
    assert "files" not in notes[empty_id]
    app.button(key=f"delete-confirm-{task_id}").click().run()
    assert not app.exception
    assert _open_buttons(app) == [empty_id]
    assert not folder.exists()


def test_the_status_filter_offers_every_status_and_shows_only_its_tasks(app, db_path):
    active = _scripted(db_path).create_task("still active").task_id
    done_runner = _scripted(db_path, "Thought: easy.\nAnswer: 42")
    completed = done_runner.create_task("finished").task_id
    done_runner.run_step(completed)
    done_runner.finalize_response(completed)
    abandoned_runner = _scripted(db_path)
    abandoned = abandoned_runner.create_task("given up").task_id
    abandoned_runner.abandon_task(abandoned)
    failing = _scripted(db_path)  # No reply scripted: its first step fails.
    failed = failing.create_task("broken").task_id
    with pytest.raises(Exception):  # noqa: B017 - whichever error the runtime raises
        failing.run_step(failed)
    expected = {"active": active, "completed": completed, "abandoned": abandoned, "failed": failed}

    app = _tasks_page(app)
    picker = app.selectbox(key="tasks-status")

    assert picker.options == ["all (4)", *(f"{status} (1)" for status in TaskStatus)]
    for status, task_id in expected.items():
        app.selectbox(key="tasks-status").set_value(status).run()
        assert _open_buttons(app) == [task_id], status
    app.selectbox(key="tasks-status").set_value("all").run()
    assert set(_open_buttons(app)) == set(expected.values())
