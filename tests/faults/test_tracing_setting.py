"""A tracing endpoint written without its scheme never hangs a step (issue 23, item 11).

`STEPWISE_OTLP_ENDPOINT=127.0.0.1:33855` used to raise a plain ValueError inside the first
step's tracing, which left the step stored as running with no error. Now the command says so
at start, and the runtime, when started another way, logs it and runs untraced.
"""

from __future__ import annotations

import logging

import pytest

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.telemetry import hooks
from agent_core.workers import ReActAgentWorker
from stepwise.cli.main import main

NO_SCHEME = "127.0.0.1:33855"


@pytest.fixture
def unresolved(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tracing not yet decided, as in a fresh process, with the endpoint lacking its scheme."""
    monkeypatch.setattr(hooks, "tracing", hooks.UNRESOLVED)
    monkeypatch.setenv(hooks.ENDPOINT_ENV, NO_SCHEME)


@pytest.mark.usefixtures("unresolved")
def test_a_step_runs_untraced_and_the_log_says_why(caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM(["Thought: easy.\nAnswer: 3"])
    runner = AgentRunner(ReActAgentWorker.from_tools([], llm=llm))
    task_id = runner.create_task("What is 1 + 2?").task_id

    with caplog.at_level(logging.ERROR):
        output = runner.run_step(task_id)

    assert output.is_last and output.output == "3"
    assert hooks.tracing is None  # Decided once: off.
    (said,) = [r.getMessage() for r in caplog.records if hooks.ENDPOINT_ENV in r.getMessage()]
    assert NO_SCHEME in said and "tracing is off" in said


@pytest.mark.usefixtures("unresolved")
@pytest.mark.parametrize("command", [["serve", "--port", "1"], ["ui", "--port", "1"]])
def test_the_command_refuses_it_at_start(command, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(command) == 1
    said = capsys.readouterr().err
    assert f"${hooks.ENDPOINT_ENV} must be an http:// or https:// URL" in said
    assert NO_SCHEME in said
