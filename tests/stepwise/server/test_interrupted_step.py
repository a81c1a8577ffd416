"""A step whose process was killed mid-step reads as interrupted over HTTP, as in the app.

Issue 23, item 12: the Agent Protocol and the extensions' task view said `running` for a
step stored as running by a process that no longer exists; the app said "interrupted: run it
again" (`AgentRunner.is_interrupted`: the step's stored claim names no live run).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import httpx
import pytest

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.store import SQLiteStore
from agent_core.workers import ReActAgentWorker

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL")

# A process that starts a step whose model call never returns, on the server's database.
_STUCK_STEP = textwrap.dedent(
    """
    import asyncio, sys
    from agent_core import AgentRunner
    from agent_core.llms import FunctionLLM
    from agent_core.store import SQLiteStore
    from agent_core.workers import ReActAgentWorker

    async def nap(messages, tools):
        print("calling", flush=True)
        await asyncio.sleep(600)
        return "Answer: never"

    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=FunctionLLM(nap)),
                        store=SQLiteStore(sys.argv[1]))
    task = agent.create_task("nap")
    print(task.task_id, flush=True)
    agent.run_step(task.task_id)
    """
)


def _steps(client: httpx.Client, task_id: str) -> list[tuple[str, str]]:
    """(Agent Protocol status, Stepwise status) of each live step, by both HTTP faces."""
    listed = client.get(f"/ap/v1/agent/tasks/{task_id}/steps").json()["steps"]
    viewed = client.get(f"/stepwise/v1/tasks/{task_id}").json()["steps"]
    assert listed == viewed  # One mapping behind both faces.
    [step] = listed
    got = client.get(f"/ap/v1/agent/tasks/{task_id}/steps/{step['step_id']}").json()
    assert got == step
    return [(s["status"], s["additional_output"]["stepwise_status"]) for s in listed]


def _stored_claim(client: httpx.Client, task_id: str, deadline: float) -> None:
    """Wait until the running step's claim is in the store (it is written after 20 ms)."""
    while time.monotonic() < deadline:
        steps = client.get(f"/ap/v1/agent/tasks/{task_id}/steps").json()["steps"]
        if steps and steps[0]["additional_output"]["stepwise_status"] == "running":
            return
        time.sleep(0.05)
    raise AssertionError("the child's step was never stored as running")


def test_a_step_killed_mid_run_reads_interrupted_and_a_live_one_running(client, settings):
    child = subprocess.Popen(
        [sys.executable, "-c", _STUCK_STEP, str(settings.db)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    try:
        assert child.stdout is not None
        task_id = child.stdout.readline().strip()
        assert child.stdout.readline().strip() == "calling"
        _stored_claim(client, task_id, time.monotonic() + 30)
        # Alive in another process: running, whatever this server's own runs are.
        assert _steps(client, task_id) == [("running", "running")]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL

    # The stored claim names a process that is gone: the app's test says interrupted.
    assert _the_app_says_interrupted(settings.db, task_id)
    assert _steps(client, task_id) == [("created", "interrupted")]


def _the_app_says_interrupted(db, task_id: str) -> bool:
    store = SQLiteStore(db)
    try:
        runner = AgentRunner(ReActAgentWorker.from_tools([], llm=ScriptedLLM([])), store=store)
        [step] = runner.get_upcoming_steps(task_id)
        return runner.is_interrupted(task_id, step.step_id)
    finally:
        store.close()
