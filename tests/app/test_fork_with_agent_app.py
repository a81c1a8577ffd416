"""Fork with an agent (issue 30), in AppTest: an imported task goes on with the agent picked.

A LangSmith run tree is imported into the app's database; its step 2 card forks with an
agent on the loopback OpenAI server, either one registered with `--agent` (on the model
saved in Settings) or the Settings agent itself; the Stepper opens the fork and its next
step asks the model. An agent lacking a recorded tool is refused in the app's words.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from agent_core.recordings.importers import import_file
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from stepwise.app.components import state
from stepwise.app.components.messages import describe_data
from tests.agent_core.recordings.importers.test_langfuse_langsmith import langsmith_run
from tests.llm_servers import OpenAIServer

from .conftest import stored
from .test_stepper import TASK_KEY, messages, ok, run_first_step, task_id
from .test_threads_forks_edits_app import card

AGENT = '''\
from agent_core.tools import FunctionTool
from agent_core.workers import FunctionCallingAgentWorker


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def build_agent(llm):
    return FunctionCallingAgentWorker([FunctionTool.from_defaults(fn=multiply)], llm)
'''


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    with OpenAIServer() as server:
        yield server


def _settings(server: OpenAIServer, **fields: Any) -> AgentSpec:
    return AgentSpec(
        worker="function_calling",
        provider="openai",
        model="loopback-model",
        base_url=server.url + "/v1",
        **fields,
    )


def _imported(db_path: Path, settings: AgentSpec) -> str:
    """The LangSmith run imported into the app's database, with `settings` saved in Settings."""
    store = SQLiteStore(db_path)
    try:
        [imported] = import_file(json.dumps(langsmith_run()).encode(), store)
        store.put_setting(state.SAVED_SPEC, settings.model_dump(mode="json", exclude={"workspace"}))
    finally:
        store.close()
    return imported


def _fork_at_step_2(at: AppTest, choice: str) -> None:
    step_2 = card(at, 2)
    assert not [b for b in step_2.button if b.label == "Fork from here"]  # No agent of its own.
    (picker,) = [s for s in step_2.selectbox if s.label == "Continue with"]
    (label,) = [o for o in picker.options if o.startswith(choice)]
    picker.set_value(label).run()
    (fork,) = [b for b in card(at, 2).button if b.label == "Fork"]
    fork.click().run()
    ok(at)


def test_an_imported_task_forks_with_a_registered_agent_and_runs_live(
    app: AppTest, db_path: Path, tmp_path: Path, model_server: OpenAIServer, monkeypatch
) -> None:
    (tmp_path / "calc.py").write_text(AGENT)
    monkeypatch.setenv("STEPWISE_AGENTS", json.dumps({"calc": "calc.py:build_agent"}))
    imported = _imported(db_path, _settings(model_server))
    app.session_state[TASK_KEY] = imported
    ok(app.run())

    _fork_at_step_2(app, "Your agent calc")

    fork = task_id(app)
    assert fork != imported
    forked = stored(db_path, fork)
    assert forked.task.forked_from is not None and forked.task.forked_from.number == 2
    assert forked.task.spec is not None and forked.task.spec["agent"] == "calc"
    model_server.script("Six times seven is 42.")
    run_first_step(app)  # The fork's next step runs live, on the Settings model.
    after = stored(db_path, fork)
    assert after.outputs[after.completed[-1]].output == "Six times seven is 42."
    [request] = model_server.model_requests
    assert [m["role"] for m in request.json["messages"]][-2:] == ["assistant", "tool"]
    assert stored(db_path, imported).task.imported  # The original is untouched.


def test_the_settings_agent_forks_an_imported_task(
    app: AppTest, db_path: Path, model_server: OpenAIServer
) -> None:
    imported = _imported(db_path, _settings(model_server, tools=("arithmetic",)))
    app.session_state[TASK_KEY] = imported
    ok(app.run())

    _fork_at_step_2(app, "Settings: Function calling with arithmetic")

    forked = stored(db_path, task_id(app))
    assert forked.task.spec is not None and forked.task.spec["tools"] == ["arithmetic"]
    model_server.script("It is 42.")
    run_first_step(app)
    after = stored(db_path, task_id(app))
    assert after.outputs[after.completed[-1]].output == "It is 42."


def test_an_agent_without_a_recorded_tool_is_refused_in_the_apps_words(
    app: AppTest, db_path: Path, model_server: OpenAIServer
) -> None:
    imported = _imported(db_path, _settings(model_server, tools=()))
    app.session_state[TASK_KEY] = imported
    ok(app.run())

    _fork_at_step_2(app, "Settings: Function calling with no tools")

    assert task_id(app) == imported  # Nothing was forked; the page stays on the task.
    said = " ".join(messages(app))
    assert "no tool named 'multiply'" in said and "Fork with an agent" in said
    assert not model_server.model_requests


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("fork_tool_missing", "no tool named 'multiply' and 'divide'"),
        ("fork_calls_unanswered", "tool calls ('multiply') have no results"),
    ],
)
def test_the_fork_refusals_name_the_tools_and_the_button(code: str, words: str) -> None:
    tools = ["multiply", "divide"] if code == "fork_tool_missing" else ["multiply"]
    text = describe_data({"code": code, "message": "refused", "params": {"tools": tools}})
    assert words in text and "Fork with an agent" in text
