"""MCP servers as the user's entries: `[tool.stepwise] mcp`, `stepwise.toml`, `$STEPWISE_MCP`.

Reading and checking entries starts nothing; the last tests start the reference
`mcp-server-time` (PyPI) to show a task's recorded server rebuilt where it is not registered.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent_core.errors import UserCodeError
from agent_core.llms import ScriptedLLM
from agent_core.spec import AgentSpec
from agent_core.tools.mcp import MCP_SERVER_FAILED
from agent_core.user_code.registry import (
    MCP_ENV,
    TOOLS_ENV,
    UserCodeRegistry,
    default_registry,
    parse_entry,
)

from ._user_projects import write_project

TIME = shlex.join([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])


@pytest.fixture(autouse=True)
def _no_inherited_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MCP_ENV, raising=False)
    monkeypatch.delenv(TOOLS_ENV, raising=False)


def errors_by_name(registry: UserCodeRegistry) -> dict[str, str]:
    return {e.name: str(e.error) for e in registry.mcp_servers() if e.error is not None}


def test_entries_come_from_the_files_and_the_environment_which_wins(tmp_path):
    write_project(
        tmp_path,
        {
            "pyproject.toml": """
                [tool.stepwise]
                mcp = { time = "uvx mcp-server-time", docs = "http://127.0.0.1:9/mcp" }
            """,
            "stepwise.toml": """
                mcp = { docs = "http://127.0.0.1:8/mcp", git = "uvx mcp-server-git" }
            """,
        },
    )
    environ = {MCP_ENV: '{"time": "python -m mcp_server_time --local-timezone UTC"}'}
    registry = UserCodeRegistry.from_environment(project=tmp_path, environ=environ)
    assert registry.problems == ()
    assert registry.mcp_server("time") == "python -m mcp_server_time --local-timezone UTC"
    assert registry.mcp_server("docs") == "http://127.0.0.1:8/mcp"  # stepwise.toml wins
    assert registry.mcp_server("git") == "uvx mcp-server-git"
    assert registry.mcp_server("nothing") is None


def test_the_command_line_entry_is_kept_as_typed(tmp_path):
    name, spec = parse_entry('time=uvx mcp-server-time --local-timezone "Europe/Paris"', kind="mcp")
    assert (name, spec) == ("time", 'uvx mcp-server-time --local-timezone "Europe/Paris"')
    assert parse_entry("docs=http://127.0.0.1:8000/mcp", kind="mcp", base=tmp_path) == (
        "docs",
        "http://127.0.0.1:8000/mcp",
    )


def test_malformed_entries_are_listed_with_their_errors_and_start_nothing(tmp_path):
    write_project(
        tmp_path,
        {
            "pyproject.toml": """
                [tool.stepwise]
                tools = { my_tools = "my_tools.py" }

                [tool.stepwise.mcp]
                python = "uvx x"
                empty = ""
                quote = "uvx 'open"
                my_tools = "uvx y"
                n = 3
            """,
        },
    )
    registry = UserCodeRegistry(project=tmp_path)
    errors = errors_by_name(registry)
    assert set(errors) == {"python", "empty", "quote", "my_tools"}
    assert "is a built-in tool's name" in errors["python"]
    assert "an MCP server needs a command" in errors["empty"]
    assert "cannot be split into words" in errors["quote"]
    assert "has the name of a tools module" in errors["my_tools"]
    (problem,) = registry.problems
    assert "MCP server 'n' must be a string, not int" in str(problem)
    assert registry.tools_module("my_tools") is not None  # The tools module keeps its name.
    with pytest.raises(UserCodeError, match="built-in tool's name"):
        registry.mcp_tools("python")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('mcp = "uvx mcp-server-time"', "mcp must be a table of name"),
        ('servers = { time = "uvx x" }', "unknown key 'servers'"),
    ],
)
def test_a_wrong_table_is_a_problem_of_the_settings(tmp_path, content, message):
    write_project(tmp_path, {"stepwise.toml": content})
    (problem,) = UserCodeRegistry(project=tmp_path).problems
    assert message in str(problem)


def test_a_malformed_environment_is_a_problem_that_names_the_variable(tmp_path):
    registry = UserCodeRegistry.from_environment(project=tmp_path, environ={MCP_ENV: "time=x"})
    (problem,) = registry.problems
    assert f"${MCP_ENV} must be a JSON object" in str(problem) and "--mcp" in str(problem)


def test_the_process_registry_reads_the_command_lines_servers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(MCP_ENV, '{"time": "uvx mcp-server-time"}')
    assert default_registry().mcp_server("time") == "uvx mcp-server-time"
    monkeypatch.setenv(MCP_ENV, '{"clock": "uvx mcp-server-time"}')
    assert default_registry().mcp_server("time") is None  # A new registry for new flags.
    assert default_registry().mcp_server("clock") == "uvx mcp-server-time"


def test_a_spec_records_the_servers_command_and_round_trips(tmp_path):
    registry = UserCodeRegistry(project=tmp_path, mcp={"time": TIME})
    spec = AgentSpec.from_registry(
        registry, worker="function_calling", tools=("arithmetic", "time")
    )
    assert spec.mcp_servers == {"time": TIME} and spec.tool_modules == {}
    assert spec.uses_user_code
    assert AgentSpec.model_validate_json(spec.model_dump_json()) == spec
    with pytest.raises(ValidationError, match="--mcp clock="):
        AgentSpec.from_registry(registry, worker="function_calling", tools=("clock",))


def test_a_recorded_server_is_started_where_no_entry_names_it(tmp_path):
    """A restarted app, from another folder without the flag, rebuilds the task's tools."""
    spec = AgentSpec.from_registry(
        UserCodeRegistry(project=tmp_path, mcp={"time": TIME}),
        worker="function_calling",
        tools=("arithmetic", "time"),
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    restarted = UserCodeRegistry(project=elsewhere)
    try:
        tools = spec.build_tools(ScriptedLLM([]), registry=restarted)
        names = [tool.name for tool in tools]
        assert {"get_current_time", "convert_time"} <= set(names) and "add" in names
    finally:
        restarted.close()


def test_a_recorded_server_that_cannot_start_fails_the_build_with_its_code(tmp_path):
    spec = AgentSpec(worker="function_calling", tools=("time",), mcp_servers={"time": "nope-x"})
    registry = UserCodeRegistry(project=Path(tmp_path))
    try:
        with pytest.raises(UserCodeError) as failed:
            spec.build_worker(registry=registry)
    finally:
        registry.close()
    assert failed.value.code == MCP_SERVER_FAILED
    assert "there is no command 'nope-x'" in str(failed.value)
