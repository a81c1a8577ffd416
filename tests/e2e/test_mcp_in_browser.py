"""An MCP server's tools in `stepwise ui`, in real headless Chromium.

The server is the reference `mcp-server-time` (PyPI), given as `--mcp time="..."` and started
by the app as a subprocess (through a shell that writes its pid first, then becomes the
server, so the test can kill the very process the app talks to). The model is the tests'
loopback OpenAI server, asking for the time in UTC and then in Tokyo. The function-calling
worker asks before each call: the first is approved and its result shows; the server is
killed; approving the second fails that step with a readable error; Reload my code restarts
the server, and the failed step runs again and the task reaches its answer.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.llm_servers import OpenAIServer, Reply, ReplyToolCall

from .conftest import ARTIFACTS
from .test_real_model_in_browser import use_server
from .test_stepper_in_browser import click, wait_for_dag
from .test_user_code_in_browser import browser, choose, open_page, server  # noqa: F401

QUESTION = "What time is it in UTC, and in Tokyo?"
TIME_TOOLS = "time (MCP server)"


def time_policy(body: dict[str, Any]) -> Reply:
    """Ask for UTC's time, then Tokyo's, then answer with what the tool said."""
    results = [m["content"] for m in body.get("messages") or () if m.get("role") == "tool"]
    if not results:
        return Reply(tool_calls=[ReplyToolCall("get_current_time", {"timezone": "UTC"})])
    if len(results) == 1:
        return Reply(tool_calls=[ReplyToolCall("get_current_time", {"timezone": "Asia/Tokyo"})])
    tokyo = json.loads(results[-1])
    return Reply(text=f"In Tokyo it is {tokyo['datetime']}, a {tokyo['day_of_week']}.")


def statuses(nodes: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node["status"]] = counts.get(node["status"], 0) + 1
    return counts


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def kill_server(pidfile: Path) -> int:
    """Kill the MCP server the app started, and wait until it is gone."""
    pid = int(pidfile.read_text())
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 20
    while _alive(pid):
        assert time.monotonic() < deadline, f"server {pid} did not die"
        time.sleep(0.05)
    return pid


def approve(page, *, completed: int) -> None:
    page.get_by_role("button", name="Approve and run step").first.wait_for(timeout=30_000)
    click(page, "Approve and run step")
    wait_for_dag(page, lambda n: statuses(n).get("completed", 0) == completed, timeout=60)


def run_model_step(page, *, waiting: int) -> None:
    """Run the model's step; its call then waits for approval."""
    click(page, "Run step")
    wait_for_dag(page, lambda n: statuses(n).get("awaiting_approval", 0) == waiting, timeout=60)


@pytest.fixture
def model():
    with OpenAIServer(policy=time_policy) as running:
        yield running


def test_an_mcp_servers_tools_in_the_browser_through_a_killed_server(
    model,
    server,  # noqa: F811
    browser,  # noqa: F811
    tmp_path,
):
    pidfile = tmp_path / "time-server.pid"
    command = shlex.join([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])
    spec = shlex.join(["sh", "-c", f"echo $$ > {shlex.quote(str(pidfile))}; exec {command}"])
    project = tmp_path / "project"
    project.mkdir()
    url = server.start(project, "--mcp", f"time={spec}")
    page = open_page(browser, url)
    use_server(page, model)

    # The form lists the server beside the built-ins; picked, it starts and shows its schemas.
    page.get_by_role("button", name="Create task").wait_for(timeout=60_000)
    page.get_by_text("Your agents, tools and MCP servers").click()
    page.get_by_text("MCP server time: sh -c").wait_for(timeout=30_000)
    assert not pidfile.exists()  # Not started until picked.
    choose(page, "Worker", "Function calling")
    tools = page.get_by_test_id("stMultiSelect")
    tools.get_by_test_id("stMultiSelectTagsContainer").last.click()
    page.get_by_role("option", name=TIME_TOOLS).click()
    page.keyboard.press("Escape")
    page.get_by_text("MCP server time (get_current_time, convert_time):").wait_for(timeout=30_000)
    page.get_by_text(
        "get_current_time (read-only): Get current time in a specific timezone"
    ).wait_for()
    page.get_by_text("Ask me before each tool call").click()
    page.screenshot(path=ARTIFACTS / "mcp-form.png", full_page=True)
    task = page.get_by_placeholder("What should the agent do?")
    task.fill(QUESTION)
    task.press("Control+Enter")
    page.wait_for_timeout(500)
    click(page, "Create task")
    wait_for_dag(page, lambda n: statuses(n) == {"upcoming": 1})
    task_url = page.url
    assert "task=" in task_url

    # The model is offered the server's own schema, asks for the time; a person approves.
    run_model_step(page, waiting=1)
    offered = model.model_requests[0].json["tools"]
    (current,) = [t["function"] for t in offered if t["function"]["name"] == "get_current_time"]
    assert current["parameters"]["properties"]["timezone"]["type"] == "string"
    approve(page, completed=2)
    page.get_by_text('"timezone": "UTC"').first.wait_for(timeout=15_000)
    page.get_by_text('"day_of_week"').first.wait_for(timeout=15_000)

    # The server dies before the second call is approved: that step fails, readably.
    run_model_step(page, waiting=1)
    first_pid = kill_server(pidfile)
    click(page, "Approve and run step")
    wait_for_dag(page, lambda n: statuses(n).get("failed", 0) == 1, timeout=60)
    page.get_by_text("the MCP server 'time'").first.wait_for(timeout=15_000)
    page.get_by_text(
        "stopped (its connection closed), so get_current_time did not run"
    ).first.wait_for()
    page.get_by_text('click "Reload my code" in the app').first.wait_for(timeout=15_000)
    page.screenshot(path=ARTIFACTS / "mcp-killed-server.png", full_page=True)
    assert page.get_by_text("Traceback").count() == 0  # Our error, not a crash.

    # Reload my code restarts the server; the failed step runs again and the task goes on.
    click(page, "New task")
    page.get_by_text("Your MCP server stopped:").wait_for(timeout=30_000)
    click(page, "Reload my code")
    page.get_by_text("restarted your MCP servers").first.wait_for(timeout=30_000)
    page.goto(url + "/?" + task_url.partition("?")[2])
    wait_for_dag(page, lambda n: statuses(n).get("failed", 0) == 1)
    click(page, "Approve and run step")
    wait_for_dag(page, lambda n: statuses(n).get("completed", 0) == 4, timeout=60)
    assert int(pidfile.read_text()) != first_pid and _alive(int(pidfile.read_text()))
    page.get_by_text('"timezone": "Asia/Tokyo"').first.wait_for(timeout=15_000)
    click(page, "Run step")
    page.get_by_text("In Tokyo it is").first.wait_for(timeout=30_000)
    page.screenshot(path=ARTIFACTS / "mcp-after-reload.png", full_page=True)
