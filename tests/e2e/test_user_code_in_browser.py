"""`stepwise ui` on the example project, in real headless Chromium.

The server is started the way a user starts it, `python -m stepwise.cli ui ...`, in a copy of
examples/; it is stopped and started again (from another folder, without the flags) on the
same database, and the task goes on from its record.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import ARTIFACTS, CHROMIUM_ARGS, ROOT, _free_port, _wait_until_up
from .test_stepper_in_browser import click, groups, wait_for_dag

HEADLINE_TASK = "Write about llamas visiting the seaside for the very first time"


class StepwiseServer:
    """`python -m stepwise.cli ui` on a free port, started and stopped by the test."""

    def __init__(self, tmp_path: Path) -> None:
        self.db = tmp_path / "e2e.db"
        self.logs = tmp_path
        self.process: subprocess.Popen | None = None
        self.url = ""
        self._starts = 0

    def start(self, cwd: Path, *flags: str) -> str:
        port = _free_port()
        command = [
            sys.executable, "-m", "stepwise.cli", "ui",
            "--port", str(port), "--db", str(self.db), *flags,
        ]  # fmt: skip
        env = {**os.environ, "STEPWISE_WORKSPACES": str(self.logs / "workspaces")}
        env.pop("STEPWISE_AGENTS", None)
        env.pop("STEPWISE_TOOLS", None)
        self._starts += 1
        log = (self.logs / f"stepwise-{self._starts}.log").open("wb")
        self.process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=log)
        log.close()
        self.url = f"http://localhost:{port}"
        _wait_until_up(self.url, self.process)
        return self.url

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of examples/: the user's own project folder."""
    folder = tmp_path / "project"
    shutil.copytree(ROOT / "examples", folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@pytest.fixture
def server(tmp_path: Path) -> Iterator[StepwiseServer]:
    running = StepwiseServer(tmp_path)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def browser(chromium_path: str):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def open_page(browser, url: str):
    # Tall enough that the Tools picker is not at the window's edge, where a click on it
    # does not open its list.
    tab = browser.new_context(viewport={"width": 1500, "height": 1500}).new_page()
    tab.goto(url)
    return tab


def choose(page, label: str, option: str) -> None:
    """Pick `option` in the select box labelled `label`."""
    page.get_by_role("combobox", name=label).click()
    page.get_by_role("option", name=option, exact=True).click()


def test_the_example_agent_in_the_browser_across_a_restart(project, server, browser, tmp_path):
    url = server.start(
        project,
        "--agent", "headline=my_agent.py:build_agent",
        "--agent", "broken=missing_module:attr",
    )  # fmt: skip
    page = open_page(browser, url)
    page.get_by_text("Demo scenarios").wait_for(timeout=30_000)

    # The entries are listed by name, imported only once picked.
    page.get_by_role("button", name="Create task").wait_for()  # the whole form is drawn
    page.get_by_text("Your agents, tools and MCP servers").click()
    page.get_by_text("Agent broken: missing_module:attr").wait_for()
    page.get_by_text("Agent headline:").wait_for()
    tools = page.get_by_test_id("stMultiSelect")  # the Tools picker: the form's only one
    tools.get_by_test_id("stMultiSelectTagsContainer").last.click()
    page.get_by_role("option", name="my_tools (your tools)").click()
    page.keyboard.press("Escape")
    page.get_by_text("Tools my_tools (word_count, shorten, shout)").wait_for()
    # The broken entry, picked, shows its traceback (as code).
    choose(page, "Worker", "Your agent: broken")
    page.get_by_text("ModuleNotFoundError: No module named 'missing_module'").first.wait_for(
        timeout=10_000
    )
    page.get_by_text("could not import agent 'broken' (missing_module:attr)").wait_for()
    page.screenshot(path=ARTIFACTS / "user-code-form.png", full_page=True)

    choose(page, "Worker", "Your agent: headline")
    page.get_by_text("Your agent gets the model chosen here").wait_for()
    task = page.get_by_placeholder("What should the agent do?")
    task.fill(HEADLINE_TASK)
    task.press("Control+Enter")
    page.wait_for_timeout(500)
    click(page, "Create task")
    wait_for_dag(page, lambda n: groups(n) == ["upcoming"])

    click(page, "Run step")
    wait_for_dag(page, lambda n: groups(n) == ["completed", "upcoming"])
    page.get_by_text("Draft by my_agent's stand-in model").first.wait_for(timeout=10_000)
    click(page, "Run step")
    wait_for_dag(page, lambda n: groups(n) == ["completed", "completed"])
    page.get_by_text("so shorten cut it to 8").first.wait_for(timeout=10_000)
    page.screenshot(path=ARTIFACTS / "user-agent-two-steps.png", full_page=True)
    task_url = page.url
    assert "task=" in task_url
    page.context.close()

    # Restart on the same database, from a folder without the project or the flags.
    server.stop()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    url = server.start(elsewhere)
    page = open_page(browser, url + "/?" + task_url.partition("?")[2])
    wait_for_dag(page, lambda n: groups(n) == ["completed", "completed"])
    assert page.get_by_text("Read only").count() == 0

    # It goes on: undo the last step and run it again with the agent rebuilt from the record.
    click(page, "Undo")
    wait_for_dag(page, lambda n: groups(n) == ["completed", "undone", "upcoming"])
    click(page, "Run step")
    wait_for_dag(page, lambda n: groups(n) == ["completed", "completed", "undone"])
    click(page, "Finalize")
    page.get_by_text("Task finished.").wait_for(timeout=10_000)
    page.screenshot(path=ARTIFACTS / "user-agent-after-restart.png", full_page=True)
