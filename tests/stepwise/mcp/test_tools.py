"""The tools in process, on a host over a SQLite file: a registered agent that asks approval.

The user's agent is a file of the project (`--agent calc=calc_agent.py:build_agent`), built on
the host's model (the scripted demo), with `tool_approval=True`: its calls wait for a person.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_core.demos import ARITHMETIC_TASK
from agent_core.host import Host
from agent_core.user_code.registry import AGENTS_ENV
from stepwise.mcp import DebuggerTools, build_server

_AGENT = '''
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def build_agent(llm):
    tools = [FunctionTool.from_defaults(fn=multiply), FunctionTool.from_defaults(fn=add)]
    return ReActAgentWorker.from_tools(tools, llm=llm, tool_approval=True)
'''


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DebuggerTools]:
    (tmp_path / "calc_agent.py").write_text(_AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(AGENTS_ENV, json.dumps({"calc": "calc_agent.py:build_agent"}))
    host = Host(tmp_path / "t.db")
    yield DebuggerTools(host, project=tmp_path)
    host.close()


def test_a_registered_agent_waits_for_approval_and_runs_the_edited_call(
    tools: DebuggerTools,
) -> None:
    task_id = tools.create_task(ARITHMETIC_TASK, agent="calc").split()[2]
    stopped = tools.run_until(task_id)
    assert "stopped (tool_approval)" in stopped and "[awaiting approval]" in stopped

    approved = tools.approve(task_id, arguments={"a": 121, "b": 4})
    assert 'call: multiply({"a": 121, "b": 4}) -> 484' in approved
    shown = tools.show_task(task_id)
    assert 'proposed: {"tool": "multiply", "args": {"a": 121, "b": 3}}' in shown
    # What the model reads next: that a person changed the call, and the edited call's result.
    assert 'changed this call to multiply with {"a": 121, "b": 4}.) 484.0' in shown


def test_an_unregistered_agent_names_the_registered_ones(tools: DebuggerTools) -> None:
    server = build_server(tools, only=["create_task"])
    result = server._tool_manager.get_tool("create_task").fn(input="hi", agent="nope")
    assert result.is_error
    assert result.structured_content["error"]["code"] == "bad_request"
    assert "registered agents: calc" in result.structured_content["error"]["hint"]


def test_a_step_is_named_by_number_and_an_unknown_one_is_step_not_found(
    tools: DebuggerTools,
) -> None:
    task_id = tools.create_task(ARITHMETIC_TASK).split()[2]
    tools.run_until(task_id)
    assert "messages sent to the model (2):" in tools.show_step(task_id, "#1")
    server = build_server(tools)
    result = server._tool_manager.get_tool("show_step").fn(task_id=task_id, step="9")
    assert result.is_error and result.content[0].text.startswith("step_not_found: ")
