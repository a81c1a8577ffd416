"""Smaller faults of the app found in the browser (issue 22, item 8), checked in AppTest."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from agent_core.user_code.imports import forget_user_modules
from agent_core.user_code.registry import AGENTS_ENV
from stepwise.app.components.messages import unplain
from tests.app.conftest import only_task_state
from tests.llm_servers import OpenAIServer, Reply


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def boxes(app: AppTest) -> str:
    found = [*app.error, *app.warning, *app.info, *app.success]
    return "\n".join(unplain(e.value) for e in found) + "\n".join(t.value for t in app.toast)


def codes(app: AppTest) -> str:
    return "\n".join(c.value for c in app.code)


def run_step(app: AppTest) -> None:
    buttons = [b for b in app.button if b.key and b.key.startswith("run-")]
    assert buttons, "no Run step button"
    ok(buttons[0].click().run())


def create_on_server(app: AppTest, url: str, text: str = "What is 1 + 2?") -> None:
    ok(app.run())
    app.selectbox(key="form-worker").set_value("react")
    app.selectbox(key="form-provider").set_value("openai").run()
    app.text_input(key="form-model-openai").input("local-model")
    app.text_input(key="form-base-url-openai").input(url)
    app.multiselect(key="form-tools").set_value(["arithmetic"])
    app.text_area(key="form-task").input(text)
    ok(app.button(key="form-create").click().run())


def _refuse(_body: dict[str, Any]) -> Reply:
    return Reply(status=401, error="Invalid API key")


def test_a_401_from_a_local_server_points_at_the_servers_key_in_settings(
    app: AppTest, db_path: Path
) -> None:
    with OpenAIServer(policy=_refuse) as server:
        create_on_server(app, f"{server.url}/v1")
        run_step(app)
        said = boxes(app)
        assert only_task_state(db_path).steps  # the step failed with the server's 401
        assert "OPENAI_API_KEY" not in said + codes(app)
        assert f"The server at {server.url}/v1 asks for a key (status 401)" in said
        assert "this browser session has none for it" in said and "a reload drops it" in said
        assert "API keys on the Settings page" in said

        app.switch_page("app_pages/settings.py")
        ok(app.run())  # the open task's server is offered a key there
        app.text_input(key="settings-key-server").input("server-key-1")
        ok(app.button(key="settings-use-key-server").click().run())
        app.switch_page("app_pages/stepper.py")
        ok(app.run())
        said = boxes(app)
        assert "refused the request's key (status 401)" in said
        assert "OPENAI_API_KEY" not in said + codes(app)
        run_step(app)  # the key typed in Settings reaches the server
        assert server.model_requests[-1].headers["authorization"] == "Bearer server-key-1"


def _captions(app: AppTest) -> str:
    return " ".join(c.value for c in app.caption)


def test_the_free_demo_model_costs_0_not_cost_unknown(app: AppTest) -> None:
    ok(app.run())
    ok(app.button(key="scenario-arithmetic").click().run())
    run_step(app)
    header = _captions(app)
    assert "cost unknown" not in header
    assert "tokens · $0" in header and "$0 (no bound)" in header


def test_a_task_with_one_failed_step_to_retry_reads_active(app: AppTest, db_path: Path) -> None:
    down = [True]

    def serve(_body: dict[str, Any]) -> Reply:
        if down[0]:
            return Reply(status=500, error="try later")
        return Reply(text="Thought: I can answer without using any more tools.\nAnswer: 3")

    with OpenAIServer(policy=serve) as server:
        create_on_server(app, f"{server.url}/v1")
        run_step(app)
        assert only_task_state(db_path).task.status.value == "failed"  # the runtime's word
        header = _captions(app)
        assert "Status: **active · 1 failed step to fix and run again**" in header
        assert "Status: **failed**" not in header
        down[0] = False
        run_step(app)
        assert "Status: **active**" in _captions(app)
        assert server.model_requests


def run_with_agents(app: AppTest, monkeypatch: Any, agents: dict[str, str]) -> None:
    """Run the app as `stepwise ui --agent NAME=TARGET ...` would start it, each agent picked.

    On the form an agent is imported only once picked (issue 23, item 12).
    """
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv(AGENTS_ENV, json.dumps(agents))
    try:
        ok(app.run())
        form = [box for box in app.selectbox if box.key == "form-worker"]
        for name in agents if form else ():
            ok(form[0].set_value(f"agent:{name}").run())
    finally:
        forget_user_modules()


def test_a_typo_in_a_command_line_agent_target_says_restart_and_sits_in_its_red_box(
    app: AppTest, app_env: Path, monkeypatch: Any
) -> None:
    (app_env / "my_agent.py").write_text("def build_agent(llm):\n    return None\n")
    run_with_agents(app, monkeypatch, {"typo": "my_agnet.py:build_agent"})
    (box,) = [e for e in app.error if "Your agent could not be loaded" in e.value]
    said = unplain(box.value)
    assert "my_agnet.py" in said  # the error's details are in the red box
    assert "typed on the command line (--agent)" in said
    assert "restart `stepwise ui`" in said


def test_an_error_raised_by_the_users_code_keeps_reload_as_the_fix_and_its_traceback(
    app: AppTest, app_env: Path, monkeypatch: Any
) -> None:
    (app_env / "broken.py").write_text("settings = {}\nMODEL = settings['model']\n")
    run_with_agents(app, monkeypatch, {"broken": "broken.py:agent"})
    (box,) = [e for e in app.error if "Your agent could not be loaded" in e.value]
    said = unplain(box.value)
    assert "KeyError" in said and "command line" not in said
    assert any("MODEL = settings['model']" in c.value for c in app.code)


def test_a_task_whose_command_line_agent_has_a_typo_says_restart_not_reload(
    app: AppTest, app_env: Path, db_path: Path, monkeypatch: Any
) -> None:
    from agent_core import AgentRunner
    from agent_core.llms import ScriptedLLM
    from agent_core.spec import AgentSpec
    from agent_core.store import SQLiteStore
    from agent_core.workers import ReActAgentWorker

    # A task run on `--agent calc=calc.py:agent`; the app restarted with the target mistyped.
    spec = AgentSpec(agent="calc", agent_target=f"{app_env / 'calc.py'}:agent")
    store = SQLiteStore(db_path)
    try:
        worker = ReActAgentWorker.from_tools([], llm=ScriptedLLM([]))
        runner = AgentRunner(worker, store=store, spec=spec.model_dump(mode="json"))
        task_id = runner.create_task("What is 1 + 2?").task_id
    finally:
        store.close()
    app.query_params["task"] = task_id
    run_with_agents(app, monkeypatch, {"calc": "calk.py:agent"})
    said = " ".join(c.value for c in app.caption)
    assert "restart `stepwise ui`" in said and "Fix your code, then press Reload" not in said
