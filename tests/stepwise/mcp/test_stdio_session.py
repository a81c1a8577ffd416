"""A coding agent's session over stdio (`python -m stepwise.cli mcp`) with the MCP SDK's client.

The server runs the built-in ReAct agent on the scripted demo model; everything else is real:
the tools run, the database is a SQLite file, undo, fork and replay are the runtime's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from agent_core.demos import ARITHMETIC_TASK
from stepwise.mcp import TOOL_DESCRIPTIONS
from tests.stepwise.mcp._session import call, text_of


def _server(folder: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEPWISE_")}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "stepwise.cli", "mcp", "--db", str(folder / "t.db")],
        cwd=folder,
        env=env,
    )


async def test_a_session_runs_to_a_tool_call_rejects_it_undoes_and_forks(tmp_path: Path) -> None:
    async with stdio_client(_server(tmp_path)) as streams, ClientSession(*streams) as session:
        await session.initialize()
        listed = await session.list_tools()
        assert {tool.name for tool in listed.tools} == set(TOOL_DESCRIPTIONS)
        assert all(tool.description for tool in listed.tools)

        created = await call(session, "create_task", input=ARITHMETIC_TASK)
        task_id = created.split()[2]
        assert "the model sees next" in created and ARITHMETIC_TASK in created

        held = await call(session, "run_until", task_id=task_id, before_tools=True)
        assert "stopped (breakpoint)" in held
        assert '{"tool": "multiply", "args": {"a": 121, "b": 3}}' in held

        rejected = await call(session, "reject", task_id=task_id, reason="add 42 first")
        assert "rejected tool step" in rejected and "add 42 first" in rejected
        shown = await call(session, "show_task", task_id=task_id[-8:])
        assert "#2 tool [completed]" in shown
        assert "Observation: The user rejected the call of multiply: add 42 first" in shown

        undone = await call(session, "undo", task_id=task_id)
        assert "undid 1 step(s)" in undone
        assert "multiply" in undone.split("upcoming (1):")[1]  # The call waits again.

        forked = await call(session, "fork", task_id=task_id, step="1")
        fork_id = forked.split()[2]
        assert fork_id != task_id and f"forked from task {task_id} after step #1" in forked
        finished = await call(session, "run_until", task_id=fork_id)
        assert "stopped (last_step)" in finished and "405" in finished

        against_fork = await call(session, "compare", task_id=task_id, other_task_id=fork_id)
        assert against_fork.startswith(f"same first 1 step(s); task {task_id} stops there")

        approved = await call(session, "approve", task_id=task_id, arguments={"a": 121, "b": 3})
        assert 'call: multiply({"a": 121, "b": 3}) -> 363' in approved
        compared = await call(session, "compare", task_id=task_id)
        assert compared.startswith("first divergence at step 2 (steps 1-1 agree)")
        assert "-The user rejected the call of multiply: add 42 first\n+363" in compared
        listed_tasks = await call(session, "list_tasks")
        assert task_id in listed_tasks and fork_id in listed_tasks


async def test_a_saved_test_passes_and_an_unknown_task_is_a_tool_error(tmp_path: Path) -> None:
    async with stdio_client(_server(tmp_path)) as streams, ClientSession(*streams) as session:
        await session.initialize()
        task_id = (await call(session, "create_task", input=ARITHMETIC_TASK)).split()[2]
        await call(session, "run_until", task_id=task_id)
        saved = await call(session, "save_test", task_id=task_id, name="adds")
        assert saved.startswith("saved stepwise_cases/adds.case.json: 3 steps")
        assert (tmp_path / "stepwise_cases" / "adds.case.json").is_file()
        assert "1 passed, 0 failed\nPASS adds" in await call(session, "run_tests")

        missing = await session.call_tool("show_task", {"task_id": "0" * 32})
        assert missing.is_error
        assert text_of(missing).startswith("task_not_found: ")
        assert missing.structured_content["error"]["code"] == "task_not_found"  # type: ignore[index]

        outside = await session.call_tool("import_trace", {"path": "../elsewhere.json"})
        assert outside.is_error and "outside the project folder" in text_of(outside)
