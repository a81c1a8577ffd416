"""Two processes on one SQLite file: the one that commits second gets `ConflictError`.

A second process (a script beside the app) adds feedback while this process's step waits on
its model. The step's result was computed without that feedback, so it is refused, recorded
as failed, and runs again on the task as the other process left it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_core import AgentRunner, StepStatus
from agent_core.errors import ConflictError, StepError
from agent_core.llms import ChatMessage, FunctionLLM, ToolSpec
from agent_core.store import SQLiteStore
from agent_core.workers import ReActAgentWorker

OTHER_PROCESS = r"""
import sys
from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.store import SQLiteStore
from agent_core.workers import ReActAgentWorker

path, task_id = sys.argv[1:]
runner = AgentRunner(ReActAgentWorker([], ScriptedLLM([])), store=SQLiteStore(path))
runner.add_feedback(task_id, "Answer in French.")
"""


def test_a_step_refused_for_another_process_is_a_conflict_and_runs_again(tmp_path: Path):
    db = tmp_path / "shared.db"
    seen: list[list[str]] = []

    def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        seen.append([str(m.content) for m in messages])
        if len(seen) == 1:
            subprocess.run(
                [sys.executable, "-c", OTHER_PROCESS, str(db), task_id], check=True, timeout=60
            )
        return "Thought: done\nAnswer: " + ("Bonjour" if len(seen) > 1 else "Hello")

    runner = AgentRunner(ReActAgentWorker([], FunctionLLM(reply)), store=SQLiteStore(db))
    task_id = runner.create_task("Greet me.").task_id

    with pytest.raises(ConflictError, match="another runner") as caught:
        runner.run_step(task_id)
    assert isinstance(caught.value, StepError)
    assert caught.value.remedy is not None

    [feedback] = runner.get_completed_steps(task_id)
    assert feedback.task_step.input == "Answer in French."
    [retry] = runner.get_upcoming_steps(task_id)
    assert retry.status is StepStatus.FAILED
    output = runner.run_step(task_id)
    assert output.is_last and str(output.output) == "Bonjour"
    assert "Answer in French." in seen[1]
