"""The planner honours approval and tool breakpoints for its sub-agents' calls.

A sub-agent's proposed call surfaces as a `tool` step of the outer task; nothing runs before
a person sees it, and approve, edit, reject and undo work on it like on any tool step.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_core import OnTool, ParallelAgentRunner, StepKind
from agent_core.llms import ScriptedLLM
from agent_core.store import SQLiteStore
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker
from agent_core.workers.planner import PlannerAgentWorker, SubAgent

WRITES: list[tuple[str, str]] = []


def write_note(name: str, text: str) -> str:
    """Write a note."""
    WRITES.append((name, text))
    return f"wrote {name}"


PLAN = json.dumps(
    {"plan": [{"id": "a", "agent": "writer", "prompt": "write a note", "depends_on": []}]}
)
ACTION = (
    "Thought: I will write it.\nAction: write_note\n"
    'Action Input: {"name": "n.txt", "text": "hello"}'
)
REPLIES = [PLAN, ACTION, "Thought: done.\nAnswer: wrote it", "All done."]


@pytest.fixture(autouse=True)
def _clear() -> None:
    WRITES.clear()


def _planner(*, approval: bool, store: Any = None) -> tuple[ParallelAgentRunner, ScriptedLLM]:
    llm = ScriptedLLM(list(REPLIES))
    tool = FunctionTool.from_defaults(fn=write_note)
    writer = ReActAgentWorker([tool], llm, tool_approval=approval)
    worker = PlannerAgentWorker(llm, {"writer": SubAgent("Writes notes.", writer)})
    return ParallelAgentRunner(worker, store=store), llm


def _call(runner: ParallelAgentRunner, task_id: str):
    return next(s for s in runner.get_upcoming_steps(task_id) if s.kind is StepKind.TOOL)


def _run_to_pause(runner: ParallelAgentRunner, **kwargs: Any) -> str:
    task_id = runner.create_task("write a note").task_id
    result = runner.run_until(task_id, **kwargs)
    assert WRITES == []  # Nothing was written before a person saw the call.
    return task_id, result


def test_a_sub_agent_call_waits_for_approval_as_an_outer_tool_step():
    runner, _ = _planner(approval=True)
    task_id, result = _run_to_pause(runner)

    assert result.reason == "tool_approval"
    call = _call(runner, task_id)
    assert call.kind is StepKind.TOOL and call.needs_approval
    assert call.input == {"tool": "write_note", "args": {"name": "n.txt", "text": "hello"}}
    finalize = next(s for s in runner.get_upcoming_steps(task_id) if s.kind is StepKind.FINALIZE)
    assert not runner.get_task_state(task_id).is_ready(finalize)  # It waits for the item.

    runner.run_step(task_id)  # Approve.
    assert WRITES == [("n.txt", "hello")]
    assert runner.run_until(task_id).reason == "last_step"
    assert runner.finalize_response(task_id).response == "All done."


def test_an_edited_sub_agent_call_runs_as_edited():
    runner, llm = _planner(approval=True)
    task_id, _ = _run_to_pause(runner)
    call = _call(runner, task_id)

    runner.run_step(
        task_id,
        step_id=call.step_id,
        input={"tool": "write_note", "args": {"name": "m.txt", "text": "hi"}},
    )

    assert WRITES == [("m.txt", "hi")]
    runner.run_until(task_id)
    assert any("user changed this call" in m.content for r in llm.requests for m in r)


def test_a_rejected_sub_agent_call_never_runs_and_the_sub_agent_reads_why():
    runner, llm = _planner(approval=True)
    task_id, _ = _run_to_pause(runner)

    out = runner.reject_step(task_id, message="not now")

    assert WRITES == [] and out.tool_calls[0].rejected
    assert runner.run_until(task_id).reason == "last_step"
    assert any(
        "rejected the call of write_note: not now" in m.content for r in llm.requests for m in r
    )


def test_a_tool_breakpoint_holds_a_sub_agent_call_without_approval():
    runner, _ = _planner(approval=False)
    task_id, result = _run_to_pause(runner, stop=OnTool("write_note"))

    assert result.reason == "breakpoint" and "write_note" in result.detail
    call = _call(runner, task_id)
    assert call.step_state.get("held") and not call.needs_approval
    assert runner.run_until(task_id, stop=OnTool("write_note"), resume=True).reason == "last_step"
    assert WRITES == [("n.txt", "hello")]


def test_undo_of_the_approved_call_restores_the_sub_task_and_survives_a_restart(tmp_path):
    runner, _ = _planner(approval=True, store=SQLiteStore(tmp_path / "t.db"))
    task_id, _ = _run_to_pause(runner)
    runner.run_step(task_id)
    runner.undo_step(task_id)

    again, _ = _planner(approval=True, store=SQLiteStore(tmp_path / "t.db"))
    call = _call(again, task_id)
    assert call.kind is StepKind.TOOL and call.needs_approval
    again.run_step(task_id)
    assert again.run_until(task_id).reason == "last_step"
    assert WRITES == [("n.txt", "hello"), ("n.txt", "hello")]
