"""Side effects: journaled file writes are reverted by undo and by failure; others warn."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_core import AgentRunner, StepStatus
from agent_core.effects import FileWriteEffect, record_effect
from agent_core.errors import StepError
from agent_core.llms import ScriptedLLM
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker


def _agent(tools, replies):
    return AgentRunner(ReActAgentWorker.from_tools(tools, llm=ScriptedLLM(replies)))


def _journaled_writer(path: Path) -> FunctionTool:
    def write(text: str) -> str:
        """Write text to the file."""
        record_effect(FileWriteEffect.before_writing(path))
        path.write_text(text)
        return "written"

    return FunctionTool.from_defaults(write, side_effects=True)


def test_undo_restores_a_file_a_step_overwrote_and_removes_one_it_created(tmp_path):
    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_text("before")
    tools = [_journaled_writer(old)]
    agent = _agent(tools, ['Action: write\nAction Input: {"text": "after"}', "Answer: ok"])
    task = agent.create_task("write")
    out = agent.run_step(task.task_id)
    assert old.read_text() == "after" and out.effects[0].kind == "file_write"
    agent.undo_step(task.task_id)
    assert old.read_text() == "before"

    tools = [_journaled_writer(new)]
    agent = _agent(tools, ['Action: write\nAction Input: {"text": "x"}'])
    task = agent.create_task("write")
    agent.run_step(task.task_id)
    assert new.exists()
    undone = agent.get_completed_steps(task.task_id)[0].task_step
    agent.undo_step(task.task_id)
    assert not new.exists() and undone.undo_warnings == []


def test_a_tool_with_unjournaled_side_effects_makes_undo_warn(tmp_path):
    sent: list[str] = []

    def send_mail(to: str) -> str:
        """Send an e-mail."""
        sent.append(to)
        return "sent"

    tool = FunctionTool.from_defaults(send_mail, side_effects=True)
    agent = _agent([tool], ['Action: send_mail\nAction Input: {"to": "a@b.c"}'])
    task = agent.create_task("mail")
    step = agent.run_step(task.task_id).task_step
    agent.undo_step(task.task_id)
    assert sent == ["a@b.c"]
    warnings = agent.get_step(task.task_id, step.step_id).undo_warnings
    assert len(warnings) == 1 and "send_mail cannot be undone" in warnings[0]


def test_a_failed_step_reverts_its_file_writes(tmp_path):
    target = tmp_path / "f.txt"
    target.write_text("kept")

    class Boom(ReActAgentWorker):
        async def arun_step(self, step, task, **kwargs):
            await super().arun_step(step, task, **kwargs)
            raise RuntimeError("after the write")

    worker = Boom(
        [_journaled_writer(target)], ScriptedLLM(['Action: write\nAction Input: {"text": "lost"}'])
    )
    agent = AgentRunner(worker)
    task = agent.create_task("write then fail")
    with pytest.raises(StepError, match="after the write"):
        agent.run_step(task.task_id)
    assert target.read_text() == "kept"
    assert agent.get_upcoming_steps(task.task_id)[0].status is StepStatus.FAILED
