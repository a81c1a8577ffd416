"""A step racing an undo is a typed conflict (409 over HTTP), never a 500 or a 404 (issue 23,
item 8): run_until picked a step that another client's undo dropped before it was claimed."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from agent_core import AgentRunner
from agent_core.errors import ConflictError
from agent_core.llms import ScriptedLLM
from agent_core.workers import ReActAgentWorker
from stepwise.server import ServerSettings, create_app

ACT = 'Thought: add.\nAction: add\nAction Input: {"a": 1, "b": 2}'


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_run_until_meeting_a_step_an_undo_dropped_says_the_task_changed() -> None:
    from agent_core.tools import FunctionTool

    llm = ScriptedLLM([ACT, ACT, ACT, "Thought: done.\nAnswer: 3"])
    worker = ReActAgentWorker.from_tools([FunctionTool.from_defaults(fn=add)], llm=llm)
    runner = AgentRunner(worker)
    task_id = runner.create_task("Add 1 and 2.").task_id
    runner.run_step(task_id)
    real = runner._arun_step
    undone: list[str] = []

    async def undo_first(task: str, step_id: Any, *args: Any, **kwargs: Any) -> Any:
        if not undone:  # Another client undoes while run_until holds the step it picked.
            undone.append(runner.undo_step(task).step_id)
        return await real(task, step_id, *args, **kwargs)

    runner._arun_step = undo_first  # type: ignore[method-assign]

    with pytest.raises(ConflictError) as raced:
        runner.run_until(task_id)

    assert undone, "the undo did not happen: the race was not run"
    assert raced.value.code == "task_changed" and raced.value.task_id == task_id
    runner._arun_step = real  # type: ignore[method-assign]
    assert runner.run_until(task_id).reason == "last_step"  # Nothing lost: it goes on.


def test_an_agent_protocol_step_whose_result_an_undo_dropped_answers_409(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step ran, then another client's undo dropped it before the route read it back."""
    monkeypatch.setenv("STEPWISE_WORKSPACES", str(tmp_path / "workspaces"))
    app = create_app(ServerSettings(db=tmp_path / "stepwise.db", token=None))
    runtime = app.state.runtime
    picked = runtime.runner_for_task
    undone: list[str] = []

    def runner_whose_read_follows_an_undo(task_id: str) -> Any:
        runner = picked(task_id)
        read = runner.get_task_state

        def undo_then_read(task: str) -> Any:
            if not undone and runner.get_task_state_unraced(task).completed:
                undone.append(runner.undo_step(task).step_id)
            return read(task)

        runner.get_task_state_unraced = read
        runner.get_task_state = undo_then_read
        return runner

    runtime.runner_for_task = runner_whose_read_follows_an_undo
    with _serving(app) as base, httpx.Client(base_url=base, timeout=30) as client:
        task_id = client.post("/ap/v1/agent/tasks", json={"input": "3 times 4"}).json()["task_id"]
        answer = client.post(f"/ap/v1/agent/tasks/{task_id}/steps", json={})
        steps = client.get(f"/ap/v1/agent/tasks/{task_id}/steps").json()["steps"]

    assert undone, "the undo did not happen: the race was not run"
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"]["code"] == "task_changed"
    assert [s["status"] for s in steps] == ["created"]  # The undo stands; the task still loads.


@contextmanager
def _serving(app: Any) -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
