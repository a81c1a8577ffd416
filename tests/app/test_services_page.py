"""The Services page on the local demo control plane (AppTest): services, a task run to its
result, a human request answered in the inbox, and a step-mode hop edited on the page.

The local control plane runs in a background thread of this process and starts once for the
module (it takes a few seconds), so the tests share it and each finds its own task.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from agent_core.store import SQLiteStore
from stepwise.app.components.services_local import stop_local_control_planes
from tests.app.conftest import new_app

CREATE = "FormSubmitter:services-new-task-Create task"


@pytest.fixture(scope="module")
def services_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One database and one local control plane for the module; caches cleared around it."""
    folder = tmp_path_factory.mktemp("services_page")
    patch = pytest.MonkeyPatch()
    st.cache_resource.clear()
    st.cache_data.clear()
    patch.setenv("STEPWISE_DB", str(folder / "stepwise.db"))
    patch.setenv("STEPWISE_WORKSPACES", str(folder / "workspaces"))
    patch.chdir(folder)
    yield folder
    stop_local_control_planes()
    st.cache_resource.clear()
    st.cache_data.clear()
    patch.undo()


@pytest.fixture
def page(services_env: Path) -> AppTest:
    app = new_app()
    app.switch_page("app_pages/services.py")
    app.run()
    assert not app.exception
    return app


def rerun_until(app: AppTest, done: Callable[[AppTest], Any], *, within: float = 15.0) -> Any:
    """Run the page again until `done(app)` is truthy (the live fragment, by hand)."""
    deadline = time.monotonic() + within
    while not (value := done(app)):
        assert not app.exception, app.exception
        if time.monotonic() > deadline:
            raise AssertionError("the page never showed it")
        time.sleep(0.05)
        app.run()
    return value


def create_task(app: AppTest, text: str, *, step_mode: bool = False) -> None:
    app.text_area(key="services.new_text").input(text)
    if step_mode:
        app.checkbox(key="services.new_step_mode").check()
    app.button(key=CREATE).click().run()
    assert not app.exception


def codes(app: AppTest) -> list[str]:
    return [code.value for code in app.code]


def hop_dag(app: AppTest) -> dict[str, Any]:
    """The arguments the page gave the hop DAG component (its nodes and edges)."""
    found = []

    def walk(node: Any) -> None:
        for child in getattr(node, "children", {}).values():
            if child.type == "component_instance" and "hop-dag" in child.proto.id:
                found.append(json.loads(child.proto.json_args))
            walk(child)

    walk(app.main)
    assert len(found) == 1, "the page draws one hop DAG"
    return found[0]


def finished(app: AppTest) -> bool:
    """Whether the shown task has ended (its hop DAG ends in a result node)."""
    return any(node["id"] == "result" for node in hop_dag(app)["nodes"])


def test_local_services_are_listed_and_a_task_runs_to_its_result(page: AppTest) -> None:
    services = page.dataframe[0].value
    assert set(services["Service"]) == {"secret_fact_agent", "dumb_fact_agent", "human"}
    assert dict(zip(services["Service"], services["Kind"], strict=True))["human"] == "human"
    assert any("Scripted demo services" in caption.value for caption in page.caption)

    create_task(page, "What is the secret fact?")
    rerun_until(page, finished)
    assert any("completed" in expander.label for expander in page.expander)
    task, hop, result = hop_dag(page)["nodes"]
    assert task["label"] == "Task: What is the secret fact?"
    assert hop["label"] == "1 · secret_fact_agent" and hop["status"] == "completed"
    assert result["status"] == "completed" and "Cria" in result["tip"]
    assert "The secret fact is: A baby llama is called a 'Cria'." in codes(page)
    # The hop's agent task is in the app's store: its step DAG is one click away.
    page.button(key=f"open-hop-{hop['id']}").click().run()
    assert not page.exception
    assert any("The secret fact is: A baby llama" in code for code in codes(page))
    assert "Step DAG" in [header.value for header in page.subheader]  # The Stepper, on its task.


def test_a_human_request_is_answered_on_the_page(page: AppTest, services_env: Path) -> None:
    create_task(page, "Ask a human: which llama is the fluffiest?")

    def answer_box(app: AppTest) -> Any:
        boxes = [box for box in app.text_area if (box.key or "").startswith("answer-text-")]
        return boxes[0] if boxes else None

    box = rerun_until(page, answer_box)
    assert "Ask a human: which llama is the fluffiest?" in codes(page)
    request_id = box.key.removeprefix("answer-text-")
    box.input("The one called Cria <b>Fluff</b>")
    page.button(key=f"FormSubmitter:answer-{request_id}-Send answer").click().run()
    assert not page.exception

    rerun_until(page, finished)
    assert "The one called Cria <b>Fluff</b>" in codes(page)
    assert answer_box(page) is None  # Answered: it left the inbox.
    nodes = hop_dag(page)["nodes"]
    assert any(node["label"].startswith("1 · human: human") for node in nodes)
    assert any(node["id"] == "result" and "Fluff" in node["tip"] for node in nodes)


def test_a_step_mode_hop_edited_on_the_page_runs_another_service(page: AppTest) -> None:
    create_task(page, "What is the secret fact?", step_mode=True)

    def edit_box(app: AppTest) -> Any:
        boxes = [box for box in app.selectbox if (box.key or "").startswith("edit-service-")]
        return boxes[0] if boxes else None

    select = rerun_until(page, edit_box)
    hop_id = select.key.removeprefix("edit-service-")
    assert select.value == "secret_fact_agent"  # What the orchestrator proposed.
    assert hop_dag(page)["nodes"][1]["status"] == "pending"
    select.select("dumb_fact_agent")
    page.button(key=f"FormSubmitter:edit-{hop_id}-Send edited hop").click().run()
    assert not page.exception

    rerun_until(page, finished)
    assert "Llamas hum to each other." in codes(page)
    graph = hop_dag(page)
    nodes = {node["id"]: node for node in graph["nodes"]}
    ran, proposed = nodes[hop_id], nodes[f"proposed:{hop_id}"]
    assert "dumb_fact_agent" in ran["label"] and "edited" in ran["label"]
    assert ran["status"] == "completed"
    assert "secret_fact_agent" in proposed["label"] and proposed["status"] == "proposed"
    assert {"from": "task", "to": f"proposed:{hop_id}", "dashes": True} in graph["edges"]
    assert {"from": "task", "to": hop_id, "dashes": False} in graph["edges"]
    assert any("edited" in expander.label for expander in page.expander)
    # The edited hop's agent task ran on dumb_fact_agent, in the app's own store.
    store = SQLiteStore(Path("stepwise.db"))
    try:
        inputs = [summary.input for summary in store.list_tasks()]
    finally:
        store.close()
    assert "What is the secret fact?" in inputs


def test_an_unreachable_control_plane_says_how_to_start_one(services_env: Path) -> None:
    app = new_app()
    app.switch_page("app_pages/services.py")
    app.session_state["services.mode"] = "A control plane at a URL"
    app.session_state["services.url"] = "http://127.0.0.1:9"  # Nothing listens on port 9.
    app.run()
    assert not app.exception
    (error,) = app.error
    shown = error.value.replace("\\", "")  # The box's markdown escapes every punctuation mark.
    assert "No control plane answers at http://127.0.0.1:9" in shown
    assert "stepwise services up CONFIG" in shown
    (token,) = [box for box in app.text_input if box.key == "services.token"]
    assert token.proto.type == token.proto.PASSWORD  # Typed tokens are never shown.


def test_a_long_task_shows_whole_though_the_list_cuts_it(page: AppTest) -> None:
    long_question = "What is the secret fact? " + "Please be thorough. " * 150  # 3,000+ chars

    create_task(page, long_question)
    rerun_until(page, finished)

    shown = [code for code in codes(page) if code.startswith("What is the secret fact? Please")]
    assert shown and set(shown) == {long_question}  # Whole; the task list holds 2,000 chars.
