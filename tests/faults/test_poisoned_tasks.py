"""No task is poisoned for good: whatever a model or a person gets stored loads again, and a
damaged task is a typed error that still deletes (issue 11, item 1 and part of item 6).

pydantic writes JSON nested about 254 levels deep but reads only about 200: tool arguments
nested 198-252 deep used to be stored and then never load again.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from agent_core import AgentRunner
from agent_core.errors import StoreError, UserError
from agent_core.llms import ChatMessage, ChatResponse, ScriptedLLM, ToolCall
from agent_core.store import SQLiteStore
from agent_core.tools.arithmetic import arithmetic_tools
from agent_core.workers import FunctionCallingAgentWorker, ReActAgentWorker


def deep(levels: int) -> dict:
    value: dict = {"x": 1}
    for _ in range(levels):
        value = {"x": value}
    return value


def _reopened(path: Path, worker) -> AgentRunner:
    return AgentRunner(worker, store=SQLiteStore(path))


@pytest.mark.parametrize("levels", [199, 230, 252])
def test_deep_function_call_arguments_are_refused_readably_and_the_task_loads(
    tmp_path: Path, levels: int
) -> None:
    call = ChatResponse(
        message=ChatMessage(
            role="assistant",
            content="",
            tool_calls=(ToolCall(id="c1", name="add", args=deep(levels)),),
        )
    )
    worker = FunctionCallingAgentWorker(arithmetic_tools(), ScriptedLLM([call, "done"]))
    agent = _reopened(tmp_path / "t.db", worker)
    task_id = agent.create_task("add").task_id
    agent.run_step(task_id)
    tool_result = agent.run_step(task_id)

    assert tool_result.tool_calls[0].is_error
    assert "nested more than" in tool_result.tool_calls[0].content  # The model reads why.
    again = _reopened(tmp_path / "t.db", worker)
    assert again.get_task_state(task_id).completed  # It loads...
    again.undo_step(task_id)  # ...undoes...
    again.delete_task(task_id)  # ...and deletes.


def test_a_deep_react_action_input_is_an_observation_and_the_task_loads(tmp_path: Path) -> None:
    action = f"Thought: add.\nAction: add\nAction Input: {json.dumps(deep(230))}"
    worker = ReActAgentWorker(arithmetic_tools(), ScriptedLLM([action]))
    agent = _reopened(tmp_path / "t.db", worker)
    task_id = agent.create_task("add").task_id

    agent.run_step(task_id)

    memory = agent.get_task(task_id).memory.get_all()
    assert "nests more than" in memory[-1].content
    assert _reopened(tmp_path / "t.db", worker).get_task_state(task_id).completed


def test_a_person_cannot_store_an_input_nested_too_deep(tmp_path: Path) -> None:
    worker = ReActAgentWorker(arithmetic_tools(), ScriptedLLM([]))
    agent = _reopened(tmp_path / "t.db", worker)
    task_id = agent.create_task("add").task_id
    step = agent.get_upcoming_steps(task_id)[0]

    with pytest.raises(UserError, match="nests more than"):
        agent.edit_step(task_id, step.step_id, deep(230))


def _one_damaged_one_fine(path: Path, damage: str) -> tuple[AgentRunner, str, str]:
    """A fresh runner on a file with a task damaged by the SQL `damage`, and a sound one."""
    worker = ReActAgentWorker(arithmetic_tools(), ScriptedLLM([]))
    agent = _reopened(path, worker)
    damaged = agent.create_task("damaged").task_id
    fine = agent.create_task("fine").task_id
    with sqlite3.connect(path) as db:
        db.execute(damage, (damaged,))
    return _reopened(path, worker), damaged, fine


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE steps SET data = '{not json' WHERE task_id = ?",
        'UPDATE tasks SET task = \'{"status": "exploded"}\' WHERE task_id = ?',
        "UPDATE steps SET data = CAST(X'FFFE00C3' AS TEXT) WHERE task_id = ?",
    ],
)
def test_a_damaged_task_is_a_store_error_the_others_load_and_it_deletes(
    tmp_path: Path, damage: str
) -> None:
    again, damaged, fine = _one_damaged_one_fine(tmp_path / "t.db", damage)
    with pytest.raises(StoreError, match=damaged):
        again.get_task_state(damaged)
    assert again.get_task(fine).input == "fine"
    again.delete_task(damaged)
    assert [t.task_id for t in again.list_tasks()] == [fine]


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE tasks SET status = 'exploded' WHERE task_id = ?",
        "UPDATE tasks SET task = '{not json', usage = 'nope' WHERE task_id = ?",
    ],
)
def test_a_damaged_row_is_listed_as_damaged_and_the_rest_of_the_list_stays(
    tmp_path: Path, damage: str
) -> None:
    again, damaged, fine = _one_damaged_one_fine(tmp_path / "t.db", damage)
    listed = {t.task_id: t for t in again.list_tasks()}
    assert listed[fine].damaged == "" and listed[damaged].damaged
    again.delete_task(damaged)
    assert [t.task_id for t in again.list_tasks()] == [fine]


def test_ten_thousand_calls_in_one_reply_queue_a_bounded_number_of_steps() -> None:
    from agent_core.workers.function_calling import MAX_CALLS_PER_REPLY

    calls = tuple(ToolCall(id=f"c{n}", name="add", args={"a": n, "b": 1}) for n in range(10_000))
    reply = ChatResponse(message=ChatMessage(role="assistant", content="", tool_calls=calls))
    worker = FunctionCallingAgentWorker(arithmetic_tools(), ScriptedLLM([reply, "done"]))
    agent = AgentRunner(worker)
    task_id = agent.create_task("add them all").task_id

    out = agent.run_step(task_id)

    assert len(out.next_steps) == MAX_CALLS_PER_REPLY + 1  # The calls, then the follow-up.
    refused = [m for m in agent.get_task(task_id).memory.get_all() if m.role == "tool"]
    assert len(refused) == 10_000 - MAX_CALLS_PER_REPLY  # Every other call is answered...
    assert "at most" in refused[0].content  # ...with why it did not run.
