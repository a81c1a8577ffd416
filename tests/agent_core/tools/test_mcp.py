"""Tools from MCP servers, on the reference `mcp-server-time` (PyPI) run as a real subprocess.

The server is started through a shell that writes its pid first and then becomes the server
(`exec`), so a test can kill the very process the SDK talks to. One test serves a small
server of our own over streamable HTTP on a loopback port, for the HTTP transport and for a
tool that is not read-only (every tool of the time server is).
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_core import AgentRunner, OnTool, StepKind, StepStatus
from agent_core.errors import StepError, ToolError, UserCodeError
from agent_core.llms import ChatMessage, ChatResponse, FunctionLLM, ScriptedLLM, ToolCall
from agent_core.llms.base import ToolSpec
from agent_core.store import InMemoryStore
from agent_core.tools.mcp import MCP_SERVER_FAILED, McpServer, McpTool
from agent_core.user_code.registry import UserCodeRegistry
from agent_core.workers.function_calling import FunctionCallingAgentWorker

QUESTION = "What time is it in UTC?"


def time_server(pidfile: Path, *flags: str) -> str:
    """The command line of `mcp-server-time` that writes its pid to `pidfile` first."""
    server = shlex.join([sys.executable, "-m", "mcp_server_time", *flags])
    script = f"echo $$ > {shlex.quote(str(pidfile))}; exec {server}"
    return shlex.join(["sh", "-c", script])


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, killed and not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def wait_until(condition, what: str, *, seconds: float = 20.0) -> None:
    """Wait for `condition` (a bound, not a timing assertion: the fault must happen)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {seconds} s")
        time.sleep(0.05)


def kill(pidfile: Path) -> int:
    pid = int(pidfile.read_text())
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not _alive(pid), f"the death of server {pid}")
    return pid


def call(call_id: str, tool: str, args: dict) -> ChatResponse:
    tool_call = ToolCall(id=call_id, name=tool, args=args)
    return ChatResponse(message=ChatMessage(role="assistant", content="", tool_calls=(tool_call,)))


def time_model() -> FunctionLLM:
    """A model that asks for the time in the zone the tool's schema names, then reads it."""

    def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> str | ChatResponse:
        results = [m for m in messages if m.role == "tool"]
        if results:
            return f"The server says: {results[-1].content}"
        (spec,) = [t for t in tools if t.name == "get_current_time"]
        zone = spec.parameters["properties"]["timezone"]
        assert zone["type"] == "string" and "'UTC' as local timezone" in zone["description"]
        return call("c1", "get_current_time", {"timezone": "UTC"})

    return FunctionLLM(reply)


@pytest.fixture
def pidfile(tmp_path: Path) -> Path:
    return tmp_path / "server.pid"


@pytest.fixture
def server(tmp_path: Path, pidfile: Path) -> Iterator[McpServer]:
    """A time server of the test's own, to kill or close."""
    started = McpServer("time", time_server(pidfile, "--local-timezone", "UTC"), cwd=tmp_path)
    try:
        yield started
    finally:
        started.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpServer]:
    """One time server for the tests that leave it running (each start takes seconds)."""
    folder = tmp_path_factory.mktemp("shared")
    started = McpServer("time", time_server(folder / "pid", "--local-timezone", "UTC"))
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def registry(tmp_path: Path, pidfile: Path) -> Iterator[UserCodeRegistry]:
    spec = time_server(pidfile, "--local-timezone", "UTC")
    made = UserCodeRegistry(project=tmp_path, mcp={"time": spec})
    try:
        yield made
    finally:
        made.close()


def test_the_servers_tools_are_listed_with_their_own_schemas(shared):
    tools = {tool.name: tool for tool in shared.tools()}
    assert set(tools) == {"get_current_time", "convert_time"}
    current = tools["get_current_time"]
    spec = current.metadata.to_spec()
    assert spec.description == "Get current time in a specific timezone"
    assert spec.parameters["type"] == "object" and spec.parameters["required"] == ["timezone"]
    assert spec.parameters["properties"]["timezone"]["type"] == "string"
    convert = tools["convert_time"].metadata.to_spec().parameters
    assert set(convert["required"]) == {"source_timezone", "time", "target_timezone"}
    # The time server marks its tools read-only: no undo warning will be made for them.
    assert current.metadata.read_only and not current.metadata.side_effects


async def test_a_call_gives_the_servers_answer_and_its_refusal_is_the_models_to_read(shared):
    tool = next(t for t in shared.tools() if t.name == "get_current_time")
    out = await tool.acall({"timezone": "UTC"}, call_id="c1")
    assert not out.is_error and out.call_id == "c1"
    assert json.loads(out.content)["timezone"] == "UTC"
    refused = await tool.acall({"timezone": "Nowhere/Atlantis"}, call_id="c2")
    assert refused.is_error and "Invalid timezone" in refused.content
    missing = await tool.acall({}, call_id="c3")
    assert missing.is_error and "timezone" in missing.content
    assert shared.failure is None  # The tool said no; the server is fine.
    again = await tool.acall({"timezone": "Asia/Tokyo"})
    assert json.loads(again.content)["timezone"] == "Asia/Tokyo"


def test_a_call_waits_for_approval_and_the_model_reads_the_servers_answer(shared):
    llm = time_model()
    worker = FunctionCallingAgentWorker(shared.tools(), llm, tool_approval=True)
    runner = AgentRunner(worker)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    tool_step, _answer = runner.get_upcoming_steps(task.task_id)
    assert tool_step.kind is StepKind.TOOL and tool_step.needs_approval
    assert tool_step.input == {
        "tool": "get_current_time",
        "args": {"timezone": "UTC"},
        "call_id": "c1",
    }
    assert len(llm.requests) == 1  # Nothing ran while it waited.
    approved = runner.run_step(task.task_id, step_id=tool_step.step_id)
    (result,) = approved.tool_calls
    assert not result.is_error and json.loads(result.content)["timezone"] == "UTC"
    final = runner.run_step(task.task_id)
    assert final.is_last and str(final.output).startswith("The server says: {")
    # Undoing the answer and the read-only call leaves no warning: nothing to take back.
    runner.undo_step(task.task_id)
    undone = runner.get_steps(task.task_id)
    tool_record = next(s for s in undone if s.step_id == tool_step.step_id)
    assert tool_record.undo_warnings == []


def test_a_rejected_call_never_reaches_the_server(shared):
    llm = time_model()
    runner = AgentRunner(FunctionCallingAgentWorker(shared.tools(), llm, tool_approval=True))
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    tool_step, _ = runner.get_upcoming_steps(task.task_id)
    rejected = runner.reject_step(task.task_id, tool_step.step_id, message="Use Tokyo time.")
    assert rejected.tool_calls[0].is_error
    runner.run_step(task.task_id)
    tool_messages = [m.content for m in llm.requests[-1] if m.role == "tool"]
    assert tool_messages == ["The user rejected the call of get_current_time: Use Tokyo time."]


def test_a_breakpoint_holds_the_call_and_the_server_runs_it_as_edited(shared):
    llm = time_model()
    runner = AgentRunner(FunctionCallingAgentWorker(shared.tools(), llm))
    task = runner.create_task(QUESTION)
    held = runner.run_until(task.task_id, stop=OnTool("get_current_time"))
    assert held.reason == "breakpoint"
    (call_step, _) = runner.get_upcoming_steps(task.task_id)
    assert call_step.step_state.get("held") and not call_step.needs_approval
    edited = {"tool": "get_current_time", "args": {"timezone": "Asia/Tokyo"}}
    out = runner.run_step(task.task_id, step_id=call_step.step_id, input=edited)
    assert json.loads(out.tool_calls[0].content)["timezone"] == "Asia/Tokyo"
    assert runner.run_until(task.task_id).reason == "last_step"
    assert '"Asia/Tokyo"' in llm.requests[-1][-1].content  # It read the edited call's result.


def test_a_killed_server_fails_the_step_readably_and_a_reload_restarts_it(registry, pidfile):
    store = InMemoryStore()
    llm = time_model()
    worker = FunctionCallingAgentWorker(registry.mcp_tools("time"), llm, tool_approval=True)
    runner = AgentRunner(worker, store=store)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    tool_step, _ = runner.get_upcoming_steps(task.task_id)
    memory_before = runner.get_task(task.task_id).memory.get_all()
    first_pid = kill(pidfile)

    with pytest.raises(StepError) as failed:
        runner.run_step(task.task_id, step_id=tool_step.step_id)
    assert failed.value.params["cause_code"] == MCP_SERVER_FAILED
    step = runner.get_step(task.task_id, tool_step.step_id)
    assert step.status is StepStatus.FAILED and step.error_code == MCP_SERVER_FAILED
    assert step.error_params["server"] == "time" and step.error_params["tool"] == "get_current_time"
    assert step.error_params["detail"].startswith("stopped")
    assert "the MCP server 'time'" in (step.error or "")
    assert 'click "Reload my code" in the app' in (step.error or "")
    assert runner.get_task(task.task_id).memory.get_all() == memory_before  # Nothing lost.
    # The app lists the stopped server with its error beside its tools.
    (entry,) = registry.mcp_servers()
    assert not entry.ok and entry.error is not None and entry.error.code == MCP_SERVER_FAILED

    registry.reload()  # "Reload my code": the app rebuilds the runner on the new generation.
    restarted = FunctionCallingAgentWorker(registry.mcp_tools("time"), llm, tool_approval=True)
    assert int(pidfile.read_text()) != first_pid
    again = AgentRunner(restarted, store=store)
    out = again.run_step(task.task_id, step_id=tool_step.step_id)
    assert json.loads(out.tool_calls[0].content)["timezone"] == "UTC"
    assert again.run_step(task.task_id).is_last


def test_close_and_reload_stop_the_subprocess(registry, pidfile):
    registry.mcp_tools("time")
    first = int(pidfile.read_text())
    assert _alive(first)
    registry.reload()
    wait_until(lambda: not _alive(first), "the reloaded server's exit")
    registry.mcp_tools("time")
    second = int(pidfile.read_text())
    assert second != first and _alive(second)
    registry.close()
    wait_until(lambda: not _alive(second), "the closed server's exit")


def test_servers_that_cannot_start_are_per_entry_errors(tmp_path, pidfile):
    registry = UserCodeRegistry(
        project=tmp_path,
        mcp={
            "time": time_server(pidfile, "--local-timezone", "UTC"),
            "ghost": "no-such-mcp-server-here --port 1",
            "badzone": time_server(tmp_path / "bad.pid", "--local-timezone", "Nowhere/Atlantis"),
        },
    )
    try:
        entries = {entry.name: entry for entry in registry.mcp_servers()}
    finally:
        registry.close()
    assert entries["time"].ok and len(entries["time"].tools) == 2
    ghost = entries["ghost"].error
    assert isinstance(ghost, UserCodeError) and ghost.code == MCP_SERVER_FAILED
    assert "there is no command 'no-such-mcp-server-here'" in str(ghost)
    assert ghost.params["server"] == "ghost" and 'click "Reload my code"' in str(ghost)
    bad = entries["badzone"].error
    assert bad is not None and bad.code == MCP_SERVER_FAILED
    # What the server wrote before it exited is quoted: here, why it refused to start.
    assert "invalid --local-timezone 'Nowhere/Atlantis'" in bad.params["stderr"]
    with pytest.raises(UserCodeError, match="there is no command"):
        registry.mcp_tools("ghost")


async def test_a_call_to_a_closed_server_is_a_typed_error(server):
    tool = server.tools()[0]
    server.close()
    with pytest.raises(ToolError) as closed:
        await tool.acall({"timezone": "UTC"})
    assert closed.value.code == MCP_SERVER_FAILED
    assert "was stopped when your code was reloaded" in str(closed.value)


# -- streamable HTTP, and a tool that changes things


def _notes_app(notes: list[str], release: threading.Event):
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("notes")

    @server.tool(description="Answers once the test lets it.")
    def hang() -> str:
        release.wait(timeout=60)
        return "released"

    @server.tool(description="Add a note to the shared list.")
    def add_note(text: str) -> str:
        notes.append(text)
        return f"{len(notes)} notes"

    @server.tool(
        description="How many notes there are.", annotations=ToolAnnotations(read_only_hint=True)
    )
    def count_notes() -> int:
        return len(notes)

    return server.streamable_http_app()


@pytest.fixture
def notes_url() -> Iterator[tuple[str, list[str], threading.Event]]:
    import uvicorn

    notes: list[str] = []
    release = threading.Event()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    config = uvicorn.Config(_notes_app(notes, release), log_level="warning", lifespan="on")
    served = uvicorn.Server(config)
    thread = threading.Thread(target=served.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    wait_until(lambda: served.started, "the notes server's start")
    try:
        yield f"http://127.0.0.1:{port}/mcp", notes, release
    finally:
        release.set()
        served.should_exit = True
        thread.join(timeout=15)
        listener.close()


def test_a_streamable_http_server_and_undo_warns_about_a_tool_that_changes_things(notes_url):
    url, notes, _ = notes_url
    server = McpServer("notes", url)
    try:
        tools = {tool.name: tool for tool in server.tools()}
        assert not tools["add_note"].metadata.read_only and tools["count_notes"].metadata.read_only
        llm = ScriptedLLM(
            [call("c1", "add_note", {"text": "buy milk"}), call("c2", "count_notes", {}), "Done."]
        )
        runner = AgentRunner(FunctionCallingAgentWorker(list(tools.values()), llm))
        task = runner.create_task("Note: buy milk")
        result = runner.run_until(task.task_id)
        assert result.reason == "last_step" and llm.exhausted
        assert notes == ["buy milk"]  # The server ran the call.
        runner.undo_step(task.task_id, steps=4)  # Back past both calls.
        undone = {
            s.input["tool"]: s.undo_warnings
            for s in runner.get_steps(task.task_id)
            if s.kind is StepKind.TOOL and s.status is StepStatus.UNDONE
        }
        (warning,) = undone["add_note"]
        assert warning.startswith("add_note cannot be undone: MCP server 'notes'")
        assert "buy milk" in warning
        assert undone["count_notes"] == []  # Read-only: nothing to take back.
    finally:
        server.close()


async def test_a_call_with_no_answer_in_time_is_a_typed_error_and_the_server_goes_on(notes_url):
    url, _, release = notes_url
    server = McpServer("notes", url, call_timeout=1)
    try:
        tools = {tool.name: tool for tool in server.tools()}
        with pytest.raises(ToolError) as late:
            await tools["hang"].acall({})
        assert late.value.code == "mcp_call_timeout" and late.value.remedy == "retry"
        assert late.value.params == {"server": "notes", "timeout_s": 1, "tool": "hang"}
        release.set()
        assert server.failure is None
        assert (await tools["count_notes"].acall({})).content == "0"
    finally:
        server.close()


def test_a_server_that_never_answers_fails_to_start_within_its_time(tmp_path):
    server = McpServer("mute", "sleep 120", cwd=tmp_path, start_timeout=1)
    try:
        with pytest.raises(UserCodeError) as mute:
            server.tools()
    finally:
        server.close()
    assert mute.value.params["detail"] == "could not start: no answer within 1 s"


def test_an_http_server_that_is_not_there_is_a_clear_error():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # Nothing listens there now.
    server = McpServer("gone", f"http://127.0.0.1:{port}/mcp")
    try:
        with pytest.raises(UserCodeError) as failed:
            server.tools()
    finally:
        server.close()
    assert failed.value.code == MCP_SERVER_FAILED
    assert "could not be reached" in failed.value.params["detail"]


def test_tools_keep_working_from_many_threads_and_loops(shared):
    """Streamlit reruns on new threads and the runtime has its own loop: any may call."""
    tool = next(t for t in shared.tools() if t.name == "get_current_time")
    assert isinstance(tool, McpTool)
    answers: list[str] = []

    def in_a_thread(zone: str) -> None:
        answers.append(json.loads(asyncio.run(tool.acall({"timezone": zone})).content)["timezone"])

    threads = [threading.Thread(target=in_a_thread, args=(z,)) for z in ("UTC", "Europe/Paris")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(answers) == ["Europe/Paris", "UTC"]
