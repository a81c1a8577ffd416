"""The sidebar names the pages by their titles after a trace is imported (issue 23, item 12).

Streamlit takes a `pages/` folder beside the script it runs for an old-style multipage app.
The checkout's page files lived there, so a server whose first request was for another page
than "/" (the Tasks page, to import a trace) ran that page's file alone, never the app's
navigation, and the sidebar named every page by its file name for as long as it ran.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.trace import export_trace
from agent_core.workers import ReActAgentWorker

from .conftest import ARTIFACTS
from .test_user_code_in_browser import browser, open_page  # noqa: F401

TITLES = ["Start", "Stepper", "Tasks", "Tests", "Playground", "Services", "Settings"]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """A task's trace file; made before the browser, whose sync API holds an event loop."""
    llm = ScriptedLLM(["Thought: t\nAnswer: 3"])
    runner = AgentRunner(ReActAgentWorker.from_tools([], llm=llm))
    task = runner.create_task("What is 1 + 2?")
    runner.run_step(task.task_id)
    path = tmp_path / "trace.json"
    path.write_text(export_trace(runner.get_task_state(task.task_id)))
    return path


def test_the_first_visit_imports_a_trace_on_the_tasks_page_and_keeps_the_titles(
    trace,
    app_url,
    browser,  # noqa: F811
):
    page = open_page(browser, app_url + "/tasks")  # The server's first request.
    page.get_by_text("Import a trace", exact=True).click()
    page.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(trace)
    page.get_by_role("button", name="Import", exact=True).click()
    page.get_by_text("Imported task").first.wait_for(timeout=30_000)

    menu = page.get_by_test_id("stSidebarNav")
    menu.get_by_text("Settings", exact=True).wait_for(timeout=10_000)
    page.screenshot(path=ARTIFACTS / "sidebar-after-import.png", full_page=True)
    shown = [line for line in menu.inner_text().split("\n") if line.strip()]
    assert [line for line in shown if line != "home"] == TITLES  # "home": Start's icon.
