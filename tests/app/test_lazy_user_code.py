"""`stepwise ui` imports the folder's code only when asked for (issue 23, item 12).

Opening the Stepper (its New task form) imported every registered agent and tools module of
the project folder, running their code. Now each is imported when the form picks it, or when
a task on it opens; the list of the user's code names them without importing them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from agent_core import user_code
from agent_core.user_code.imports import forget_user_modules
from agent_core.user_code.registry import AGENTS_ENV, TOOLS_ENV

AGENT = """
open({marker!r}, "a").write("{name}\\n")
from agent_core.llms import ScriptedLLM
from agent_core.workers import ReActAgentWorker

def build(llm):
    return ReActAgentWorker.from_tools([], llm=ScriptedLLM(["Thought: t\\nAnswer: done"]))
"""
TOOLS = """
open({marker!r}, "a").write("tools\\n")

def shout(text: str) -> str:
    '''Say it louder.'''
    return text.upper()
"""


@pytest.fixture
def project(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Two agent files and a tools file that write `imported.txt` when imported."""
    marker = str(app_env / "imported.txt")
    for name in ("lazy", "other"):
        (app_env / f"{name}_agent.py").write_text(AGENT.format(marker=marker, name=name))
    (app_env / "lazy_tools.py").write_text(TOOLS.format(marker=marker))
    monkeypatch.setattr(sys, "path", list(sys.path))
    agents = {name: f"{name}_agent.py:build" for name in ("lazy", "other")}
    monkeypatch.setenv(AGENTS_ENV, json.dumps(agents))
    monkeypatch.setenv(TOOLS_ENV, json.dumps({"loud": "lazy_tools.py"}))
    forget_user_modules()
    yield app_env
    forget_user_modules()


def imported(project: Path) -> list[str]:
    marker = project / "imported.txt"
    return marker.read_text().split() if marker.exists() else []


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_opening_the_form_imports_nothing_and_a_pick_imports_only_what_it_picks(app, project):
    ok(app.run())
    assert imported(project) == []
    assert "Your agent: lazy" in app.selectbox(key="form-worker").options  # Listed by name.
    assert "loud (your tools)" in app.multiselect(key="form-tools").options
    shown = [element.value for element in app.text]
    assert f"Agent lazy: {project / 'lazy_agent.py'}:build" in shown

    ok(app.multiselect(key="form-tools").select("loud").run())
    assert imported(project) == ["tools"]
    assert "Tools loud (shout): " + str(project / "lazy_tools.py") in [t.value for t in app.text]

    ok(app.selectbox(key="form-worker").set_value("agent:lazy").run())
    assert imported(project) == ["tools", "lazy"]


def test_a_task_whose_agent_fails_opens_importing_that_agent_only(app, project, make_app):
    ok(app.run())
    ok(app.selectbox(key="form-worker").set_value("agent:lazy").run())
    app.text_area(key="form-task").input("Say done.")
    ok(app.button(key="form-create").click().run())
    task_id = app.session_state["stepwise.task_id"]
    assert task_id

    # The agent's file breaks; a fresh start: modules forgotten, runners gone.
    broken = project / "lazy_agent.py"
    broken.write_text(broken.read_text() + "\nraise RuntimeError('half written')\n")
    user_code.reload()
    st.cache_resource.clear()
    (project / "imported.txt").unlink()
    again = make_app()
    again.query_params["task"] = task_id
    ok(again.run())
    assert any("half written" in code.value for code in again.code)  # It failed, and says so.
    assert imported(project) == ["lazy"]  # The fix advice looked at no other agent.
