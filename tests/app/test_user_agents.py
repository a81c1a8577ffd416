"""The user's own agents and tools in the create form, driven through AppTest.

Each test's working folder (`tmp_path`, see conftest) is the user's project: a copy of
examples/ with its `[tool.stepwise]` table, plus whatever the test breaks on purpose.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from agent_core import user_code
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.types import TaskState
from agent_core.user_code.imports import forget_user_modules
from agent_core.user_code.registry import AGENTS_ENV, TOOLS_ENV
from stepwise.app.components.messages import unplain
from stepwise.app.components.user_code_view import RELOAD_HELP

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TASK_KEY = "stepwise.task_id"
HEADLINE_TASK = "Write about llamas visiting the seaside for the very first time"
BROKEN_FILE = "settings = {}\nMODEL = settings['model']\n"


@pytest.fixture
def project(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The example project copied into the working folder; its imports forgotten afterwards."""
    for name in ("my_agent.py", "my_tools.py", "pyproject.toml"):
        shutil.copy(EXAMPLES / name, app_env / name)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv(AGENTS_ENV, raising=False)
    monkeypatch.delenv(TOOLS_ENV, raising=False)
    yield app_env
    forget_user_modules()


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def worker_choices(at: AppTest) -> list[str]:
    return list(at.selectbox(key="form-worker").options)


def create_task(at: AppTest, text: str) -> AppTest:
    at.text_area(key="form-task").input(text)
    at.button(key="form-create").click().run()
    return ok(at)


def run_step(at: AppTest) -> AppTest:
    (button,) = [b for b in at.button if b.key and b.key.startswith("run-")][:1]
    button.click().run()
    return ok(at)


def stored(db_path: Path, task_id: str) -> TaskState:
    store = SQLiteStore(db_path)
    try:
        return store.load_task(task_id)
    finally:
        store.close()


def texts(at: AppTest) -> str:
    """Plain text and the red boxes (a user-code error's details are in its box)."""
    boxes = [unplain(element.value) for element in at.error]
    return "\n".join([element.value for element in at.text] + boxes)


def test_the_form_lists_the_users_agent_beside_the_built_in_workers_and_tools(app, project):
    ok(app.run())
    assert worker_choices(app) == [
        "ReAct",
        "ReAct with images",
        "Function calling",
        "Planner",
        "Your agent: headline",
    ]
    tools = app.multiselect(key="form-tools")
    assert "my_tools (your tools)" in tools.options and "arithmetic" in tools.options
    shown = texts(app)
    assert f"Agent headline: {project / 'my_agent.py'}:build_agent" in shown
    assert f"Tools my_tools: {project / 'my_tools.py'}" in shown  # Not imported until picked.
    assert app.button(key="form-reload").help == RELOAD_HELP
    assert not app.error
    ok(tools.select("my_tools").run())
    assert "Tools my_tools (word_count, shorten, shout)" in texts(app)


def test_a_task_on_the_users_agent_runs_two_steps_and_records_its_target(app, project, db_path):
    ok(app.run())
    app.selectbox(key="form-worker").set_value("agent:headline").run()
    assert "Tools" not in [m.label for m in app.multiselect]  # the agent brings its own
    create_task(app, HEADLINE_TASK)
    task_id = app.session_state[TASK_KEY]
    spec = AgentSpec.model_validate(stored(db_path, task_id).task.spec)
    assert spec.agent == "headline"
    assert spec.agent_target == f"{project / 'my_agent.py'}:build_agent"

    run_step(app)
    run_step(app)
    state = stored(db_path, task_id)
    first, second = (output.output for output in state.completed_steps)
    assert "Draft by my_agent's stand-in model" in first
    assert (
        second.startswith("Headline: Breaking: Write about llamas")
        and state.completed_steps[-1].is_last
    )


def test_the_users_tools_can_be_given_to_a_built_in_worker(app, project, db_path):
    ok(app.run())
    app.multiselect(key="form-tools").select("my_tools").run()
    create_task(app, "Count the words in 'a b c'.")
    spec = AgentSpec.model_validate(stored(db_path, app.session_state[TASK_KEY]).task.spec)
    assert spec.worker == "react" and spec.tools == ("arithmetic", "my_tools")
    assert spec.tool_modules == {"my_tools": str(project / "my_tools.py")}


def test_a_failing_target_shows_its_traceback_and_the_built_ins_still_work(
    app, project, monkeypatch
):
    (project / "bad_agent.py").write_text(BROKEN_FILE)
    monkeypatch.setenv(
        AGENTS_ENV, json.dumps({"broken": "missing_module:attr", "bad": "bad_agent.py:build"})
    )
    ok(app.run())
    assert "Your agent: headline" in worker_choices(app)
    assert not app.error  # Nothing is imported until picked.
    ok(app.selectbox(key="form-worker").set_value("agent:broken").run())
    ok(app.selectbox(key="form-worker").set_value("agent:bad").run())
    codes = [code.value for code in app.code]
    assert "ModuleNotFoundError: No module named 'missing_module'" in codes
    (trace,) = [code for code in codes if "bad_agent.py" in code]
    assert f'File "{project / "bad_agent.py"}", line 2, in <module>' in trace
    assert trace.rstrip().endswith("KeyError: 'model'") and "importlib" not in trace
    shown = texts(app)
    assert "could not import agent 'broken' (missing_module:attr)" in shown
    assert "Reload my code" in shown
    assert len(app.error) == 2  # one box per failing target

    # A built-in scenario still runs.
    next(b for b in app.button if b.label == "Start").click().run()
    run_step(ok(app))
    assert app.session_state[TASK_KEY]


def test_an_agent_that_fails_to_build_shows_its_traceback_and_creates_nothing(
    app, project, db_path
):
    source = (project / "my_agent.py").read_text()
    (project / "my_agent.py").write_text(
        source.replace(
            "    if llm.model == DEMO_MODEL_NAME:",
            "    1 / 0\n    if llm.model == DEMO_MODEL_NAME:",
        )
    )
    ok(app.run())
    app.selectbox(key="form-worker").set_value("agent:headline").run()
    create_task(app, HEADLINE_TASK)
    assert TASK_KEY not in app.session_state or app.session_state[TASK_KEY] is None
    (trace,) = [code.value for code in app.code if "ZeroDivisionError" in code.value]
    assert "in build_agent" in trace and "1 / 0" in trace
    assert "your agent 'headline'" in texts(app) and "failed to build" in texts(app)
    store = SQLiteStore(db_path)
    assert store.list_tasks() == []
    store.close()


def test_reload_my_code_picks_up_a_fixed_file(app, project):
    source = (project / "my_agent.py").read_text()
    (project / "my_agent.py").write_text("raise RuntimeError('half written')\n")
    ok(app.run())
    ok(app.selectbox(key="form-worker").set_value("agent:headline").run())
    assert any("RuntimeError: half written" in code.value for code in app.code)

    (project / "my_agent.py").write_text(source)
    app.button(key="form-reload").click().run()
    ok(app)
    assert not [code for code in app.code if "half written" in code.value]
    assert not app.error and app.selectbox(key="form-worker").value == "agent:headline"


def test_a_task_whose_agent_no_longer_imports_opens_read_only_with_the_reason(
    app, project, make_app
):
    ok(app.run())
    app.selectbox(key="form-worker").set_value("agent:headline").run()
    create_task(app, HEADLINE_TASK)
    run_step(app)
    task_id = app.session_state[TASK_KEY]

    # The file breaks; the server restarts (caches cleared, modules forgotten).
    (project / "my_agent.py").write_text(BROKEN_FILE)
    st.cache_resource.clear()
    st.cache_data.clear()
    user_code.reload()
    again = make_app()
    again.query_params["task"] = task_id
    ok(again.run())
    assert any("Read only" in error.value for error in again.error)
    assert "could not import agent 'headline'" in texts(again)
    assert any("Traceback" in block.value or "Error" in block.value for block in again.code)
    assert next(b for b in again.button if b.label == "Undo").disabled


def test_an_imported_trace_naming_someones_code_imports_nothing_when_opened(app, app_env, db_path):
    marker = app_env / "imported-code-ran"
    evil = app_env / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').close()\ndef build(llm):\n    return None\n")
    from agent_core import AgentRunner
    from agent_core.llms import ScriptedLLM
    from agent_core.trace import export_trace, import_trace
    from agent_core.workers import ReActAgentWorker

    spec = AgentSpec(agent="evil", agent_target=f"{evil}:build").model_dump(mode="json")
    source = AgentRunner(ReActAgentWorker.from_tools([], llm=ScriptedLLM([])), spec=spec)
    task_id = source.create_task("look at me").task_id
    store = SQLiteStore(db_path)
    try:
        imported = import_trace(export_trace(source.get_task_state(task_id)), store)
    finally:
        store.close()

    app.query_params["task"] = imported
    ok(app.run())

    assert "look at me" in [block.value for block in app.code]
    assert not marker.exists()


def test_a_task_a_script_started_on_the_users_agent_goes_on_in_the_app(app, project, db_path):
    # The user's own script, on the same database file as the app, with the project's registry.
    code = user_code.default_registry()
    spec = AgentSpec.from_registry(code, agent="headline")
    script_store = SQLiteStore(db_path)
    agent = spec.build_runner(store=script_store, registry=code)
    task_id = agent.create_task(HEADLINE_TASK).task_id
    agent.run_step(task_id)
    script_store.close()

    app.query_params["task"] = task_id
    ok(app.run())
    run_step(app)

    state = stored(db_path, task_id)
    assert len(state.completed) == 2
    assert state.task.spec is not None and state.task.spec["agent"] == "headline"
    assert not app.error
