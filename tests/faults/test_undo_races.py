"""A step racing an undo is a typed conflict (409 over HTTP), never a 500 or a 404 (issue 23,
item 8): run_until picked a step that another client's undo dropped before it was claimed."""

from __future__ import annotations

from typing import Any

import pytest

from agent_core import AgentRunner
from agent_core.errors import ConflictError
from agent_core.llms import ScriptedLLM
from agent_core.workers import ReActAgentWorker

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
