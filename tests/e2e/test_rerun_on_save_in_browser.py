"""Re-run on save in real headless Chromium, on `stepwise ui --agent calc=agent.py:build_agent`
(reload on by default for a file target): saving the agent file shows "Your code changed" on
the open task with no click, and re-running from step 2 runs step 2 on the new code."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from agent_core.demos import ARITHMETIC_TASK
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.user_code import UserCodeRegistry
from tests.agent_core.recordings._projects import write_agent

from .conftest import ARTIFACTS, CHROMIUM_ARGS, idle
from .test_user_code_in_browser import StepwiseServer


@pytest.fixture
def server(tmp_path: Path) -> Iterator[StepwiseServer]:
    running = StepwiseServer(tmp_path)
    try:
        yield running
    finally:
        running.stop()


def _recorded(project: Path, db: Path) -> str:
    """Steps 1 and 2 of the arithmetic task on the project's agent: multiply, then add."""
    registry = UserCodeRegistry(project=project, agents={"calc": "agent.py:build_agent"})
    spec = AgentSpec.from_registry(registry, agent="calc")
    store = SQLiteStore(db)
    try:
        runner = spec.build_runner(store=store, registry=registry)
        task_id = runner.create_task(ARITHMETIC_TASK).task_id
        runner.run_until(task_id, max_steps=2)
    finally:
        store.close()
        registry.close()
    return task_id


def _save(path: Path, old: str, new: str) -> None:
    stat = path.stat()
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_saving_the_agent_file_offers_a_rerun_whose_step_2_runs_the_new_code(
    chromium_path: str, server: StepwiseServer, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    project = tmp_path / "project"
    project.mkdir()
    write_agent(project)
    task_id = _recorded(project, server.db)
    url = server.start(project, "--agent", "calc=agent.py:build_agent")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.goto(f"{url}/?task={task_id}")
        page.get_by_text("Completed steps").first.wait_for(timeout=30_000)
        idle(page)
        assert page.get_by_text("Your code changed").count() == 0

        _save(project / "agent.py", "return a + b\n", "return a + b + 1\n")
        # No click: the watcher sees the save and the page reruns itself.
        expect(page.get_by_text("Your code changed").first).to_be_visible(timeout=15_000)
        idle(page)
        page.screenshot(path=ARTIFACTS / "rerun-on-save-offer.png")

        step = page.get_by_label("Re-run from step", exact=True)
        step.fill("2")
        step.press("Enter")
        idle(page)
        page.get_by_role("button", name="Re-run from step 2", exact=True).click()
        page.get_by_text("Re-ran from step 2: step 1 came", exact=False).first.wait_for(
            timeout=20_000
        )
        idle(page)
        assert task_id not in page.url  # The new task is open.

        page.get_by_role("button", name="Run step", exact=True).first.click()
        # add(363, 42) on the saved code: 406, where the recording had 405.
        page.get_by_text("406", exact=True).first.wait_for(timeout=20_000)
        idle(page)
        page.screenshot(path=ARTIFACTS / "rerun-on-save-step-2.png")
        browser.close()
