"""The Playground page: one stateless Execute Agent step at a time, by hand."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from agent_core.store import SQLiteStore

SEED = "What is (121 * 3) + 42?"


def _open(app: AppTest) -> AppTest:
    app.run()
    return app.switch_page("app_pages/playground.py").run()


def _button(app: AppTest, label: str):
    return next(b for b in app.button if b.label.startswith(label))


def _say(app: AppTest, text: str) -> None:
    [box] = [t for t in app.text_area if t.label == "Message"]
    box.input(text)
    next(b for b in app.get("form_submit_button") if b.proto.label == "Add the message").click()
    app.run()


def _answer(app: AppTest, output: str) -> None:
    [box] = [t for t in app.text_input if t.label.startswith("Output of")]
    box.input(output).run()
    _button(app, "Send the tool outputs").click().run()


def test_the_seed_question_runs_step_by_step_with_the_demo_and_tool_outputs_typed(
    app: AppTest, db_path: Path
):
    _open(app)
    _button(app, "Use the built-in arithmetic tools").click().run()
    _say(app, SEED)
    _button(app, "Execute").click().run()
    assert not app.exception
    assert any("agent asks for" in m.value and "multiply" in m.value for m in app.markdown)

    _answer(app, "363")
    _button(app, "Execute").click().run()
    _answer(app, "405")
    _button(app, "Execute").click().run()

    shown = " ".join(m.value for m in app.markdown)
    assert "405" in shown.replace("\\", "")
    [request_json, response_json, curl] = [c.value for c in app.code]
    request = json.loads(request_json)
    assert [m["role"] for m in request["messages"]] == ["user", "agent", "tool", "agent", "tool"]
    assert json.loads(response_json)["model"]["scripted"] is True
    assert curl.startswith("curl -s http://127.0.0.1:8000/v1/agent/execute")
    store = SQLiteStore(db_path)
    assert store.list_tasks() == []  # Nothing was stored.
    store.close()


def test_a_built_in_tool_runs_from_the_page(app: AppTest):
    _open(app)
    _button(app, "Use the built-in arithmetic tools").click().run()
    _say(app, SEED)
    _button(app, "Execute").click().run()
    _button(app, "Run multiply").click().run()
    [box] = [t for t in app.text_input if t.label.startswith("Output of")]
    assert box.value == "363"


def test_invalid_tools_are_refused_next_to_the_box_and_nothing_runs(app: AppTest):
    _open(app)
    [tools] = [t for t in app.text_area if t.label.startswith("Tools")]
    tools.input('[{"name": "bad name!", "parameters": {}}]').run()
    _say(app, SEED)
    _button(app, "Execute").click().run()
    errors = [e.value for e in app.error]
    assert any("The tools are not valid" in e and "Tools box" in e for e in errors)
