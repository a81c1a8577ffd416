"""The New task form: it shows what applies to the chosen worker, and speaks the app's words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.runtime.caching.cache_utils import CachedFunc
from streamlit.testing.v1 import AppTest

from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from stepwise.app.components import runtime
from stepwise.app.components.messages import unplain
from tests.app.conftest import only_task_state


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def walk(node: Any) -> list[Any]:
    """The page's elements in the order they are drawn."""
    children = getattr(node, "children", None)
    if not children:
        return [node]
    return [leaf for key in sorted(children) for leaf in walk(children[key])]


def keys(at: AppTest, kind: str) -> set[str]:
    return {w.key for w in getattr(at, kind) if w.key}


def choose_worker(at: AppTest, worker: str) -> AppTest:
    ok(at.run())
    at.selectbox(key="form-worker").set_value(worker).run()
    return ok(at)


def create(at: AppTest, text: str) -> AppTest:
    at.text_area(key="form-task").input(text)
    (button,) = [b for b in at.button if b.label == "Create task"]
    button.click().run()
    return ok(at)


def test_the_planner_form_picks_sub_agents_not_tools_and_can_ask_before_tools(
    app: AppTest,
) -> None:
    choose_worker(app, "planner")
    assert "form-tools" not in keys(app, "multiselect")
    assert "form-sub-agents" in keys(app, "multiselect")
    assert "form-approval" in keys(app, "checkbox")


@pytest.mark.parametrize("worker", ["react", "function_calling"])
def test_a_tool_worker_picks_tools_and_no_sub_agents(app: AppTest, worker: str) -> None:
    choose_worker(app, worker)
    assert "form-tools" in keys(app, "multiselect")
    assert "form-sub-agents" not in keys(app, "multiselect")
    assert "form-approval" in keys(app, "checkbox")


def test_a_planner_task_keeps_the_chosen_sub_agents_and_tool_approval(
    app: AppTest, db_path: Path
) -> None:
    choose_worker(app, "planner")
    app.multiselect(key="form-sub-agents").set_value(["file", "image"])
    app.checkbox(key="form-approval").check()
    create(app, "Write a poem to poem.txt")
    spec = AgentSpec.model_validate(only_task_state(db_path).task.spec)
    assert (spec.worker, spec.sub_agents, spec.tool_approval) == (
        "planner",
        ("file", "image"),
        True,
    )


def test_a_planner_without_sub_agents_is_refused_beside_the_button(
    app: AppTest, db_path: Path
) -> None:
    choose_worker(app, "planner")
    app.multiselect(key="form-sub-agents").set_value([])
    create(app, "Write a poem")
    assert any("at least one sub-agent" in e.value for e in app.error)
    store = SQLiteStore(db_path)
    try:
        assert not store.list_tasks()
    finally:
        store.close()


def test_no_key_is_reported_under_create_task_in_the_apps_words(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    ok(app.run())
    app.selectbox(key="form-provider").set_value("openai").run()
    create(app, "Say hi")
    shown = " ".join(unplain(e.value) for e in app.error)
    assert "Add an OpenAI key on the Settings page" in shown
    assert "api_key" not in shown and "OpenAILLM" not in shown
    # Under the button that was clicked, not at the top of the page.
    order = [getattr(node, "label", None) or node.type for node in walk(app.main)]
    assert order.index("Create task") < order.index("error")


@pytest.mark.parametrize("cached", [runtime.shared_host])
def test_building_the_runtime_shows_no_internal_name(cached: CachedFunc) -> None:
    # Streamlit's default spinner says "Running `shared_host(...)`": a name from our code.
    spinner = cached._info.show_spinner
    assert spinner is False or (isinstance(spinner, str) and "_" not in spinner)
