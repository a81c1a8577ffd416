"""Runs side by side: branches and tasks aligned on their shared prefix, the first difference."""

from __future__ import annotations

from typing import Any

import pytest

from agent_core import AgentRunner
from agent_core.errors import UserError
from agent_core.llms import ChatMessage, ChatResponse, FunctionLLM, Usage
from agent_core.llms.base import ToolCall
from agent_core.recordings.compare import RunRef, compare
from agent_core.store import InMemoryStore
from agent_core.tools import FunctionTool
from agent_core.workers import FunctionCallingAgentWorker


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _call(a: int, b: int) -> ChatResponse:
    message = ChatMessage(
        role="assistant", tool_calls=(ToolCall(id="c1", name="add", args={"a": a, "b": b}),)
    )
    return ChatResponse(message=message, usage=Usage(prompt_tokens=10, completion_tokens=5))


def _runner(
    replies: list[Any], *, system: str | None = None, store: InMemoryStore | None = None
) -> AgentRunner:
    count = {"n": 0}

    def reply(messages: list[ChatMessage], tools: Any) -> Any:
        count["n"] += 1
        return replies[(count["n"] - 1) % len(replies)]

    worker = FunctionCallingAgentWorker.from_tools(
        [FunctionTool.from_defaults(fn=add)], llm=FunctionLLM(reply), system_prompt=system
    )
    return AgentRunner(worker, store=store)


def _run_all(runner: AgentRunner, task_id: str) -> None:
    while runner.get_upcoming_steps(task_id):
        runner.run_step(task_id)


def test_two_branches_share_their_prefix_and_differ_in_the_reply() -> None:
    runner = _runner([_call(2, 3), "It is 5.", "Five."])
    task_id = runner.create_task("What is 2 + 3?").task_id
    _run_all(runner, task_id)
    first_branch = runner.get_task_output(task_id).task_step.branch_id
    runner.undo_step(task_id)
    runner.run_step(task_id)  # The model answers otherwise: a second branch.

    result = compare(runner, [RunRef(task_id, first_branch), RunRef(task_id)])

    assert result.shared == 2
    assert len(result.rows) == 1
    difference = result.first_difference
    assert difference is not None and (difference.number, difference.kind) == (3, "reply")
    assert "-It is 5." in difference.diff and "+Five." in difference.diff
    # Totals are per run, the shared steps counted in each.
    assert [len(run.steps) for run in result.runs] == [3, 3]
    assert result.runs[0].tokens > result.runs[0].steps[2].tokens > 0


def test_a_fork_with_other_tool_arguments_differs_at_that_step() -> None:
    runner = _runner([_call(2, 3), "done"])
    task_id = runner.create_task("What is 2 + 3?").task_id
    _run_all(runner, task_id)
    step_1 = runner.get_completed_steps(task_id)[0].task_step.step_id
    fork = runner.fork_task(task_id, step_1)
    tool_step = runner.get_upcoming_steps(fork.task_id)[0]
    runner.run_step(fork.task_id, input={**tool_step.input, "args": {"a": 2, "b": 4}})
    runner.run_step(fork.task_id)

    result = compare(runner, [RunRef(task_id), RunRef(fork.task_id)])

    assert result.shared == 1  # The fork's copy of step 1 is the same step, under a new id.
    difference = result.first_difference
    assert difference is not None and (difference.number, difference.kind) == (2, "input")
    assert '"b": 4' in difference.diff


def test_a_changed_system_prompt_differs_in_the_request() -> None:
    store = InMemoryStore()
    task_ids = []
    for system in ("Be brief.", "Be thorough."):
        runner = _runner(["5"], system=system, store=store)
        task_id = runner.create_task("What is 2 + 3?").task_id
        _run_all(runner, task_id)
        task_ids.append(task_id)

    result = compare(store, [RunRef(task_ids[0]), RunRef(task_ids[1])])

    difference = result.first_difference
    assert difference is not None and (difference.number, difference.kind) == (1, "request")
    assert "-    Be brief." in difference.diff and "+    Be thorough." in difference.diff


def test_the_same_run_twice_has_no_difference() -> None:
    runner = _runner([_call(2, 3), "5"])
    task_id = runner.create_task("q").task_id
    _run_all(runner, task_id)
    result = compare(runner, [RunRef(task_id), RunRef(task_id)])
    assert result.rows == () and result.first_difference is None
    assert "No difference" in result.report()


def test_one_run_is_not_a_comparison() -> None:
    runner = _runner(["5"])
    task_id = runner.create_task("q").task_id
    with pytest.raises(UserError) as caught:
        compare(runner, [RunRef(task_id)])
    assert caught.value.code == "compare_runs_too_few"
    with pytest.raises(UserError) as caught:
        compare(runner, [RunRef(task_id, "nope"), RunRef(task_id)])
    assert caught.value.code == "branch_not_found"
