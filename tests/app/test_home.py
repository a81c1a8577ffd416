"""The Start page: what Stepwise is in two lines and where to start, without taking the
Stepper's place as the page "/" (and a reload of a task's URL) opens."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore


def test_the_start_page_says_what_stepwise_is_and_links_every_page(app: AppTest):
    app.run()
    app.switch_page("app_pages/home.py").run()
    assert not app.exception
    assert [t.value for t in app.title] == ["Stepwise"]
    intro = [m.value for m in app.markdown]
    assert len(intro) == 2
    assert "one step at a time" in intro[0]
    assert "Stepper" in intro[1] and "Settings" in intro[1]
    links = {link.proto.label.split(":")[0]: link.proto.page for link in app.get("page_link")}
    assert links.pop("Stepper") in ("", "stepper")  # The default page: the browser opens "/".
    assert links == {
        "Tasks": "tasks",
        "Playground": "playground",
        "Services": "services",
        "Settings": "settings",
    }


def test_the_stepper_is_still_the_page_the_app_opens_on(app: AppTest):
    app.run()
    assert not app.exception
    assert [h.value for h in app.header] == ["New task"]


def test_a_reload_of_a_task_url_still_opens_that_task(app: AppTest, db_path: Path):
    runner = AgentSpec().build_runner(store=SQLiteStore(db_path))
    task_id = runner.create_task("What is (121 * 3) + 42?").task_id
    app.query_params["task"] = task_id
    app.run()
    assert not app.exception
    assert any(b.label == "Undo" for b in app.button)
    assert "What is (121 * 3) + 42?" in [c.value for c in app.code]
