"""Restart: a task created in one process continues in another on the same SQLite file.

The child processes are real Python processes on the same file, so nothing can be carried
over in memory; one of them is killed with SIGKILL in the middle of a step.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_core import AgentRunner, StepStatus, TaskStatus
from agent_core.errors import ConflictError
from agent_core.llms import ChatMessage, ScriptedLLM
from agent_core.store import SQLiteStore
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL")

QUESTION = "What is 1 + 2, after a nap?"
CALL_ADD = 'Thought: add.\nAction: add\nAction Input: {"a": 1, "b": 2}'
CALL_SLOW = 'Thought: nap.\nAction: slow\nAction Input: {"seconds": 60}'
ANSWER = "Thought: done.\nAnswer: 3"
TIMEOUT = 60

# Shared by the child scripts: the same tools and reply texts as in this module.
_PRELUDE = f"""
import json, sys, time
from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.store import SQLiteStore
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker

CALL_ADD = {CALL_ADD!r}
CALL_SLOW = {CALL_SLOW!r}
ANSWER = {ANSWER!r}

def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

def slow(seconds: int) -> str:
    \"\"\"Sleep, then say so.\"\"\"
    time.sleep(seconds)
    return "slept"

def runner(*replies):
    llm = ScriptedLLM(replies)
    tools = [FunctionTool.from_defaults(fn=add), FunctionTool.from_defaults(fn=slow)]
    worker = ReActAgentWorker.from_tools(tools, llm=llm)
    return AgentRunner(worker, store=SQLiteStore(sys.argv[1])), llm

def dump_completed(agent, task_id):
    return [
        {{
            "step_id": o.task_step.step_id,
            "number": o.task_step.number,
            "output": o.output,
            "tool_calls": [c.model_dump(mode="json") for c in o.tool_calls],
        }}
        for o in agent.get_completed_steps(task_id)
    ]
"""

_CREATE_AND_RUN_ONE = """
agent, llm = runner(CALL_ADD)
task_id = agent.create_task(sys.argv[2]).task_id
agent.run_step(task_id)
assert llm.exhausted
print(json.dumps({
    "task_id": task_id,
    "completed": dump_completed(agent, task_id),
    "upcoming": [s.step_id for s in agent.get_upcoming_steps(task_id)],
}))
"""

_RUN_ONE_THEN_BLOCK = """
agent, llm = runner(CALL_ADD, CALL_SLOW)
task_id = agent.create_task(sys.argv[2]).task_id
agent.run_step(task_id)
print(json.dumps({"task_id": task_id, "completed": dump_completed(agent, task_id)}), flush=True)
agent.run_step(task_id)  # the tool sleeps; the test kills this process meanwhile
print("the blocking step finished: the test did not kill this process", flush=True)
"""

_LIST_TASKS = """
agent, _ = runner()
print(json.dumps([s.model_dump(mode="json") for s in agent.list_tasks()]))
"""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def slow(seconds: int) -> str:
    """In this process the nap is instant."""
    return f"woke after {seconds}"


def make_runner(store: SQLiteStore, *replies: str) -> tuple[AgentRunner, ScriptedLLM]:
    llm = ScriptedLLM(replies)
    tools = [FunctionTool.from_defaults(fn=add), FunctionTool.from_defaults(fn=slow)]
    return AgentRunner(ReActAgentWorker.from_tools(tools, llm=llm), store=store), llm


def contents(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


def dump_completed(agent: AgentRunner, task_id: str) -> list[dict[str, Any]]:
    return [
        {
            "step_id": o.task_step.step_id,
            "number": o.task_step.number,
            "output": o.output,
            "tool_calls": [c.model_dump(mode="json") for c in o.tool_calls],
        }
        for o in agent.get_completed_steps(task_id)
    ]


def write_script(tmp_path: Path, name: str, body: str) -> Path:
    script = tmp_path / f"{name}.py"
    script.write_text(_PRELUDE + textwrap.dedent(body))
    return script


def run_child(script: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=script.parent,
    )
    assert done.returncode == 0, f"child {script.name} failed:\n{done.stderr}"
    return done.stdout


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "stepwise.db"


@pytest.fixture
def open_store(db_path: Path) -> Iterator[Any]:
    opened: list[SQLiteStore] = []

    def _open() -> SQLiteStore:
        opened.append(SQLiteStore(db_path))
        return opened[-1]

    yield _open
    for store in opened:
        store.close()


def test_task_continues_in_another_process_with_identical_completed_steps(
    tmp_path: Path, db_path: Path, open_store: Any
) -> None:
    script = write_script(tmp_path, "create_and_run_one", _CREATE_AND_RUN_ONE)
    child = json.loads(run_child(script, str(db_path), QUESTION))
    task_id = child["task_id"]
    assert [step["number"] for step in child["completed"]] == [1]

    agent, llm = make_runner(open_store(), ANSWER)
    assert [s.task_id for s in agent.list_tasks()] == [task_id]
    assert dump_completed(agent, task_id) == child["completed"]
    assert [s.step_id for s in agent.get_upcoming_steps(task_id)] == child["upcoming"]
    [call] = child["completed"][0]["tool_calls"]
    assert (call["tool_name"], call["args"], call["content"]) == ("add", {"a": 1, "b": 2}, "3")

    output = agent.run_step(task_id)
    assert output.task_step.step_id == child["upcoming"][0]
    assert output.task_step.number == 2
    assert output.is_last and output.output == "3"
    # The model in this process saw what the other process's step put into memory.
    assert contents(llm.requests[0][1:]) == [
        ("user", QUESTION),
        ("assistant", CALL_ADD),
        ("user", "Observation: 3"),
    ]
    response = agent.finalize_response(task_id)
    assert response.response == "3"
    assert [(s.tool_name, s.content) for s in response.sources] == [("add", "3")]
    assert llm.exhausted
    assert dump_completed(agent, task_id)[:1] == child["completed"]

    # And back: a third process sees the finished task.
    lister = write_script(tmp_path, "list_tasks", _LIST_TASKS)
    [summary] = json.loads(run_child(lister, str(db_path)))
    assert summary["task_id"] == task_id
    assert summary["status"] == TaskStatus.COMPLETED.value
    assert (summary["steps_completed"], summary["steps_upcoming"]) == (2, 0)


def _wait_until_running(
    agent: AgentRunner, proc: subprocess.Popen[str], *, timeout: float = 30
) -> tuple[str, str]:
    """Poll the file until the child's second step is `running`; return (task_id, step_id)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            _, err = proc.communicate(timeout=TIMEOUT)
            pytest.fail(f"the child exited ({proc.returncode}) before its step ran:\n{err}")
        for summary in agent.list_tasks():
            state = agent.get_task_state(summary.task_id)
            running = [s for s in state.step_queue if s.status is StepStatus.RUNNING]
            if running and state.completed:  # not the first step, which also runs briefly
                return summary.task_id, running[0].step_id
        time.sleep(0.05)
    pytest.fail(f"no step was marked running within {timeout} s")


def test_process_killed_mid_step_leaves_an_interrupted_rerunnable_step(
    tmp_path: Path, db_path: Path, open_store: Any
) -> None:
    script = write_script(tmp_path, "run_one_then_block", _RUN_ONE_THEN_BLOCK)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(db_path), QUESTION],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        watcher, _ = make_runner(open_store())
        task_id, step_id = _wait_until_running(watcher, proc)
        # While the child lives, its claim holds: nobody else may run the step.
        assert not watcher.is_interrupted(task_id, step_id)
        with pytest.raises(ConflictError, match="already running"):
            watcher.run_step(task_id)
        os.kill(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == -signal.SIGKILL, err
    before_crash = json.loads(out.splitlines()[0])
    assert before_crash["task_id"] == task_id
    assert len(before_crash["completed"]) == 1

    agent, llm = make_runner(open_store(), CALL_SLOW, ANSWER)
    step = agent.get_step(task_id, step_id)
    assert step.status is StepStatus.RUNNING
    assert step.claimed_by is not None
    assert step.claimed_by.startswith(f"{socket.gethostname()}:{proc.pid}:")
    assert agent.is_interrupted(task_id, step_id)
    assert dump_completed(agent, task_id) == before_crash["completed"]
    # Nothing of the killed attempt reached memory: the step is re-run from a clean slate.
    assert contents(agent.get_task(task_id).memory.get_all()) == [
        ("user", QUESTION),
        ("assistant", CALL_ADD),
        ("user", "Observation: 3"),
    ]
    [summary] = agent.list_tasks()
    assert summary.status is TaskStatus.ACTIVE
    assert (summary.steps_completed, summary.steps_upcoming) == (1, 1)

    rerun = agent.run_step(task_id)
    assert rerun.task_step.step_id == step_id
    assert rerun.task_step.status is StepStatus.COMPLETED
    assert rerun.task_step.attempts == 2
    assert rerun.task_step.number == 2
    assert [(c.tool_name, c.content) for c in rerun.tool_calls] == [("slow", "woke after 60")]
    assert contents(llm.requests[0][1:]) == [
        ("user", QUESTION),
        ("assistant", CALL_ADD),
        ("user", "Observation: 3"),
    ]
    last = agent.run_step(task_id)
    assert last.is_last and last.task_step.number == 3
    assert agent.finalize_response(task_id).response == "3"
    assert llm.exhausted

    after = make_runner(open_store())[0]
    assert dump_completed(after, task_id)[:1] == before_crash["completed"]
    assert [o.task_step.step_id for o in after.get_completed_steps(task_id)][1] == step_id
    assert after.get_task(task_id).status is TaskStatus.COMPLETED
