"""Open a run recorded elsewhere and fork it with your agent (issue 30), in headless Chromium.

`stepwise ui --agent calc=calc.py:build_agent` runs on a copy of no project but that file;
Settings points the app at the loopback OpenAI server. A pydantic-ai run, traced by its own
instrumentation as OTLP JSON, is uploaded on the Tasks page and opens in the Stepper as a
read-only task; its step 2 card forks with the agent `calc` (on the Settings model), the
fork opens, and Run step asks the model live for the answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.agent_core.recordings.importers._traces import otlp_json, pydantic_ai_trace
from tests.llm_servers import OpenAIServer

from .conftest import ARTIFACTS, idle
from .test_real_model_in_browser import run_one_step, use_server
from .test_travel_and_edits_in_browser import open_card
from .test_user_code_in_browser import browser, open_page, server  # noqa: F401

AGENT = '''\
from agent_core.tools import FunctionTool
from agent_core.workers import FunctionCallingAgentWorker


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def build_agent(llm):
    return FunctionCallingAgentWorker([FunctionTool.from_defaults(fn=multiply)], llm)
'''
ANSWER = "Six times seven is 42, said the fork."


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """The trace file; made before the browser, whose sync API holds an event loop."""
    path = tmp_path / "pydantic-ai-run.json"
    path.write_text(json.dumps(otlp_json(pydantic_ai_trace())))
    return path


@pytest.fixture
def model_server():
    with OpenAIServer() as running:
        yield running


def pick(page: Page, label: str, option: re.Pattern[str]) -> None:
    """Pick the option matching `option` in the selectbox labelled `label`."""
    wanted = page.get_by_role("option", name=option)
    for _ in range(3):  # A rerun landing as the list opens closes it: open it again.
        page.get_by_test_id("stSelectbox").filter(has_text=label).first.click()
        try:
            wanted.first.wait_for(state="visible", timeout=5_000)
            break
        except PlaywrightTimeout:
            continue
    wanted.first.click()
    idle(page)


def test_an_uploaded_trace_forks_at_step_2_with_my_agent_and_runs_to_its_answer(
    trace,
    model_server,
    server,  # noqa: F811
    browser,  # noqa: F811
    tmp_path,
):
    project = tmp_path / "project"
    project.mkdir()
    (project / "calc.py").write_text(AGENT)
    page = open_page(browser, server.start(project, "--agent", "calc=calc.py:build_agent"))
    page.get_by_text("Demo scenarios").wait_for(timeout=30_000)
    use_server(page, model_server)  # Settings: the model the user's agent runs on.

    page.get_by_role("link", name="Tasks").click()
    page.get_by_text("Import a trace", exact=True).click()
    page.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(trace)
    page.get_by_role("button", name="Import", exact=True).click()
    page.get_by_text("Imported task").first.wait_for(timeout=30_000)
    expect(page.get_by_text("3 steps done").first).to_be_visible(timeout=15_000)

    second = open_card(page, 2)
    second.get_by_role("button", name="Fork with an agent").click()
    pick(page, "Continue with", re.compile(r"^Your agent calc, on "))
    page.screenshot(path=ARTIFACTS / "import-fork-picker.png")
    page.get_by_role("button", name="Fork", exact=True).click()
    page.get_by_text("Forked from task").first.wait_for(timeout=15_000)
    expect(page.get_by_text("2 steps done").first).to_be_visible()

    model_server.script(ANSWER)
    run_one_step(page)  # The fork's next step asks the model, live.
    page.get_by_text(ANSWER).first.wait_for(timeout=15_000)
    expect(page.get_by_role("button", name="Finalize", exact=True)).to_be_enabled()
    page.screenshot(path=ARTIFACTS / "import-fork-answer.png", full_page=True)
    [request] = model_server.model_requests
    assert [m["role"] for m in request.json["messages"]][-2:] == ["assistant", "tool"]
    assert "multiply" in json.dumps(request.json.get("tools"))  # The agent's own tool.
