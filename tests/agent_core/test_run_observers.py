"""The runtime's observer hook: told of each step and chat, and never able to break one."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.telemetry import hooks
from agent_core.types import StepStatus
from agent_core.workers import ReActAgentWorker


class Recorder:
    def __init__(self, *, broken: bool = False) -> None:
        self.calls: list[str] = []
        self.broken = broken

    def _note(self, name: str) -> None:
        self.calls.append(name)
        if self.broken:
            raise RuntimeError(f"{name} bug")

    def step_started(self, task_id: str, step: Any, input: Any) -> None:
        self._note("step_started")

    def step_ended(self, output: Any) -> None:
        self._note("step_ended")

    def chat_started(self, message: str) -> None:
        self._note("chat_started")

    def chat_ended(self, response: Any) -> None:
        self._note("chat_ended")


def test_a_raising_observer_is_logged_and_the_chat_completes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken, heard = Recorder(broken=True), Recorder()
    removers = [hooks.add_observer(broken), hooks.add_observer(heard)]
    try:
        runner = AgentRunner(ReActAgentWorker([], ScriptedLLM(["Thought: ok\nAnswer: hi"])))
        with caplog.at_level(logging.ERROR, logger="agent_core.telemetry.hooks"):
            response = runner.chat("hello")
    finally:
        for remove in removers:
            remove()

    assert str(response) == "hi"
    (task_id,) = runner.state.task_dict
    assert [s.status for s in runner.get_steps(task_id)] == [StepStatus.COMPLETED]
    expected = ["chat_started", "step_started", "step_ended", "chat_ended"]
    assert broken.calls == expected and heard.calls == expected
    assert len([r for r in caplog.records if "run observer" in r.getMessage()]) == 4
    assert broken not in hooks.observers and heard not in hooks.observers
