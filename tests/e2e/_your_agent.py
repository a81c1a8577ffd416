"""What the browser tests of a user's agent (pydantic-ai, the Agents SDK, LangGraph) share:
create a task on it, run a step, approve an edited call, and reopen the task after a restart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .test_stepper_in_browser import click, groups, wait_for_dag
from .test_user_code_in_browser import choose, open_page

__all__ = ["approve_edited", "create_task", "labels", "reopen_elsewhere", "run_one"]


def labels(nodes: list[dict]) -> list[str]:
    return [node["label"] for node in nodes]


def run_one(page, done: int) -> list[dict]:
    """Click Run step and wait until `done` steps have completed; the DAG's nodes then."""
    click(page, "Run step")
    return wait_for_dag(page, lambda n: groups(n).count("completed") == done)


def create_task(page, agent: str, question: str) -> dict:
    """Pick "Your agent: `agent`", create a task asking `question`; its first DAG node."""
    page.get_by_role("button", name="Create task").wait_for(timeout=30_000)
    choose(page, "Worker", f"Your agent: {agent}")
    task = page.get_by_placeholder("What should the agent do?")
    task.fill(question)
    task.press("Control+Enter")
    page.wait_for_timeout(500)
    click(page, "Create task")
    (first,) = wait_for_dag(page, lambda n: groups(n) == ["upcoming"])
    return first


def approve_edited(page, args: dict[str, Any], *, screenshot: Path, done: int) -> None:
    """Edit the call awaiting approval to `args`, approve it, wait for `done` completed steps."""
    page.get_by_role("button", name="Approve and run step").first.wait_for(timeout=15_000)
    arguments = page.get_by_label("Arguments").first
    arguments.fill(json.dumps(args))
    arguments.press("Control+Enter")
    page.wait_for_timeout(500)
    page.screenshot(path=screenshot, full_page=True)
    click(page, "Approve and run step")
    wait_for_dag(page, lambda n: groups(n).count("completed") == done)


def reopen_elsewhere(server, browser, tmp_path: Path, page):
    """Restart the app on the same database from a folder without the project or the flags,
    and open the task `page` showed: the task's record must rebuild its agent."""
    task_url = page.url
    assert "task=" in task_url
    page.context.close()
    server.stop()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    url = server.start(elsewhere)
    return open_page(browser, url + "/?" + task_url.partition("?")[2])
