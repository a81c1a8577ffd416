"""Hostile inputs, played through the real workers on a real SQLite file (issue 11).

Each attack must end in a typed `AgentCoreError` or in an observation the model reads; the
task must then load, undo and delete from a fresh runner on the same file; nothing may be
written outside the workspace; and the runtime loop may not stall while the attack runs (a
heartbeat on the loop measures its CPU and wall time between beats).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_core import AgentRunner
from agent_core.errors import AgentCoreError, StoreError
from agent_core.llms import ChatMessage, ChatResponse, ScriptedLLM, ToolCall
from agent_core.store import SQLiteStore
from agent_core.tools.arithmetic import arithmetic_tools
from agent_core.tools.calculator import calculator_tool
from agent_core.tools.files import file_tools
from agent_core.tools.workspace import Workspace
from agent_core.trace import export_trace, import_trace
from agent_core.workers import FunctionCallingAgentWorker, ReActAgentWorker

from ._heartbeat import Heartbeat
from .test_poisoned_tasks import deep

# Liveness bounds, not speed targets. The worst reply here (10,000 tool calls) holds the loop
# about 0.25 s of its thread's CPU on a quiet machine, and load does not stretch CPU time; wall
# time it stretches (1.9 s in CI with two test groups on two cores), so the wall bound only
# catches a loop that sleeps or waits, which costs no CPU.
MAX_BUSY_S = 1.0
MAX_LATE_S = 10.0
MB = 1_000_000


def _calls(*calls: tuple[str, object]) -> ChatResponse:
    tool_calls = tuple(
        ToolCall(id=f"c{n}", name=name, args=args) for n, (name, args) in enumerate(calls)
    )
    return ChatResponse(message=ChatMessage(role="assistant", content="", tool_calls=tool_calls))


def _action(tool: str, raw_input: str) -> str:
    return f"Thought: go.\nAction: {tool}\nAction Input: {raw_input}"


@dataclass(frozen=True)
class Attack:
    """Hostile model replies for one worker, and how many steps to run them."""

    worker: str  # "react" | "function_calling"
    replies: tuple[object, ...]
    steps: int = 2
    tool_approval: bool = False


def _nested_call(levels: int) -> ChatResponse:
    return _calls(("add", deep(levels)))


ATTACKS: dict[str, Attack] = {
    **{
        f"fc-args-nested-{n}": Attack("function_calling", (_nested_call(n), "done"))
        for n in (63, 64, 65, 200, 253)
    },
    **{
        f"react-input-nested-{n}": Attack("react", (_action("add", json.dumps(deep(n))),))
        for n in (63, 65, 253)
    },
    **{
        f"react-approval-nested-{n}": Attack(
            "react", (_action("add", json.dumps(deep(n))),), steps=2, tool_approval=True
        )
        for n in (65, 253)
    },
    "react-1MB-newlines": Attack("react", ("\n" * MB,), steps=1),
    "react-1MB-spaces": Attack("react", (" " * MB,), steps=1),
    "react-1MB-thought": Attack("react", ("Thought:" * (MB // 8),), steps=1),
    "react-newlines-before-action": Attack(
        "react", ("Thought:" + "\n" * MB + 'Action: add\nAction Input: {"a": 1, "b": 2}',)
    ),
    "fc-10000-calls": Attack(
        "function_calling",
        (_calls(*[("add", {"a": n, "b": 1}) for n in range(10_000)]), "done"),
        steps=3,
    ),
    "calculator-round-huge": Attack(
        "react", (_action("calculator", json.dumps({"expression": "round(1, -10**8)"})),)
    ),
    "calculator-tower": Attack(
        "react", (_action("calculator", json.dumps({"expression": "9**9**9**9"})),)
    ),
    "calculator-long-expression": Attack(
        "react", (_action("calculator", json.dumps({"expression": "1+" * 200_000 + "1"})),)
    ),
    "surrogates-and-nul": Attack("react", ("Thought: \ud800\x00\udfff\nAnswer: \x00\ud800",), 1),
    "reply-2MB": Attack("react", ("Answer: " + "x" * 2 * MB,), steps=1),
    "write-outside": Attack(
        "react",
        (
            _action("write_file", json.dumps({"path": "../../escaped.txt", "content": "x"})),
            _action("write_file", json.dumps({"path": "/tmp/escaped.txt", "content": "x"})),
            _action("read_file", json.dumps({"path": "/etc/passwd"})),
        ),
        steps=3,
    ),
    "fc-write-nested-path": Attack(
        "function_calling", (_calls(("write_file", {"path": deep(70), "content": "x"})), "ok")
    ),
}


def _worker(attack: Attack, workspace: Workspace):
    tools = [*arithmetic_tools(), calculator_tool(), *file_tools(workspace)]
    llm = ScriptedLLM(list(attack.replies))
    if attack.worker == "react":
        return ReActAgentWorker(tools, llm, tool_approval=attack.tool_approval)
    return FunctionCallingAgentWorker(tools, llm, tool_approval=attack.tool_approval)


def _run_attack(runner: AgentRunner, task_id: str, steps: int) -> list[BaseException]:
    """Run up to `steps` steps; typed errors are collected, anything else escapes."""
    refused: list[BaseException] = []
    for _ in range(steps):
        if not runner.get_task_state(task_id).queue:
            break
        try:
            runner.run_step(task_id)
        except AgentCoreError as exc:
            refused.append(exc)
            break
    return refused


def _files_under(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_hostile_reply_is_typed_never_poisons_never_escapes_never_stalls(
    tmp_path: Path, name: str
) -> None:
    attack = ATTACKS[name]
    area = tmp_path / "area"  # The database and the workspaces; nothing may land beside them.
    area.mkdir()
    workspace = Workspace(area / "ws")
    db = area / "t.db"
    runner = AgentRunner(_worker(attack, workspace), store=SQLiteStore(db))
    task_id = runner.create_task("Do as you are told.").task_id

    with Heartbeat().watching() as heart:
        _run_attack(runner, task_id, attack.steps)

    assert heart.max_busy_s < MAX_BUSY_S, f"the runtime loop computed {heart.max_busy_s:.2f} s"
    assert heart.max_late_s < MAX_LATE_S, f"the runtime loop stalled {heart.max_late_s:.2f} s"
    fresh = AgentRunner(_worker(Attack(attack.worker, ()), workspace), store=SQLiteStore(db))
    state = fresh.get_task_state(task_id)  # It loads...
    if state.completed:
        fresh.undo_step(task_id)  # ...undoes...
    fresh.delete_task(task_id)  # ...and deletes.
    assert fresh.list_tasks() == []
    assert _files_under(tmp_path) <= {"area", *(f"area/{p}" for p in _files_under(area))}
    assert all(not p.startswith("..") for p in _files_under(area))
    assert not Path("/tmp/escaped.txt").exists()


def _trace_of_one_step(tmp_path: Path) -> dict:
    worker = ReActAgentWorker(arithmetic_tools(), ScriptedLLM([_action("add", '{"a":1,"b":2}')]))
    runner = AgentRunner(worker, store=SQLiteStore(tmp_path / "source.db"))
    task_id = runner.create_task("add").task_id
    runner.run_step(task_id)
    return json.loads(export_trace(runner.get_task_state(task_id)))


def _task_field(trace: dict, **fields: object) -> dict:
    """The trace with `fields` replaced in its task record."""
    state = trace["task"]
    return {**trace, "task": {**state, "task": {**state["task"], **fields}}}


HOSTILE_TRACES: dict[str, Callable[[dict], object]] = {
    "version-true": lambda t: {**t, "version": True},
    "task-id-traversal": lambda t: _task_field(t, task_id="../../etc"),
    "task-id-empty": lambda t: _task_field(t, task_id=""),
    "nested-input": lambda t: _task_field(t, input=deep(253)),
    "not-an-object": lambda t: [t],
    "truncated": lambda t: json.dumps(t)[:-40],
}


@pytest.mark.parametrize("name", list(HOSTILE_TRACES))
def test_a_hostile_trace_is_refused_typed_and_the_store_stays_usable(
    tmp_path: Path, name: str
) -> None:
    trace = HOSTILE_TRACES[name](_trace_of_one_step(tmp_path))
    text = trace if isinstance(trace, str) else json.dumps(trace)
    store = SQLiteStore(tmp_path / "target.db")
    with pytest.raises(AgentCoreError):
        import_trace(text, store, as_new=False)
    runner = AgentRunner(ReActAgentWorker([], ScriptedLLM([])), store=store)
    assert runner.list_tasks() == []
    assert runner.create_task("still usable").task_id


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE steps SET data = '{not json' WHERE task_id = ?",
        "UPDATE steps SET data = CAST(X'FFFE00C3' AS TEXT) WHERE task_id = ?",
        "UPDATE tasks SET status = 'exploded' WHERE task_id = ?",
        "UPDATE steps SET output = '[]' WHERE task_id = ?",
        "UPDATE steps SET snapshot = 'null' WHERE task_id = ?",
        "UPDATE messages SET data = '{\"role\": 7}' WHERE owner = ?",
        "UPDATE prompts SET data = 'nope' WHERE task_id = ?",
    ],
)
def test_a_damaged_row_is_a_store_error_naming_the_task_and_it_still_deletes(
    tmp_path: Path, damage: str
) -> None:
    db = tmp_path / "t.db"
    worker = ReActAgentWorker(arithmetic_tools(), ScriptedLLM([_action("add", '{"a":1,"b":2}')]))
    runner = AgentRunner(worker, store=SQLiteStore(db))
    damaged = runner.create_task("damaged").task_id
    runner.run_step(damaged)
    fine = runner.create_task("fine").task_id
    with sqlite3.connect(db) as connection:
        connection.execute(damage, (damaged,))

    fresh = AgentRunner(ReActAgentWorker([], ScriptedLLM([])), store=SQLiteStore(db))
    try:
        fresh.get_task_state(damaged)
    except StoreError as exc:
        assert damaged in str(exc)
    assert fresh.get_task(fine).input == "fine"
    fresh.delete_task(damaged)
    assert [t.task_id for t in fresh.list_tasks()] == [fine]
