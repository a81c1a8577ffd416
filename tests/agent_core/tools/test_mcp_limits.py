"""MCP servers that misbehave at the edges: a stderr flood, a tool list the SDK cannot parse.

Each server is a small script of the test's own, run as a real stdio subprocess.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_core.errors import UserCodeError
from agent_core.tools._mcp_stderr import RING_BYTES
from agent_core.tools.mcp import MCP_SERVER_FAILED, MCP_TOOLS_UNREADABLE, McpServer

FLOOD_MB = 100

SERVER = """
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

MODE, DEPTH, FLOOD_MB = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if MODE.startswith("flood"):
    block = b"x" * (1 << 20)
    for _ in range(FLOOD_MB):
        sys.stderr.buffer.write(block)
    sys.stderr.buffer.write(b"\\nLAST WORDS: the flood is over\\n")
    sys.stderr.flush()
    if MODE == "flood-exit":
        sys.exit(3)


def nested(depth):
    schema = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


async def list_tools(ctx, params):
    tool = types.Tool(name="deep", description="A deep one.", input_schema=nested(DEPTH))
    return types.ListToolsResult(tools=[tool])


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text="pong")])


async def main():
    async with stdio_server() as (read, write):
        await Server("edge", on_list_tools=list_tools, on_call_tool=call_tool).run(
            read, write, Server("edge").create_initialization_options()
        )


anyio.run(main)
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "edge_server.py"
    path.write_text(SERVER)
    return path


@pytest.fixture
def started() -> Iterator[list[McpServer]]:
    servers: list[McpServer] = []
    yield servers
    for server in servers:
        server.close()


def edge_server(started: list[McpServer], script: Path, mode: str, depth: int = 3) -> McpServer:
    command = shlex.join([sys.executable, str(script), mode, str(depth), str(FLOOD_MB)])
    server = McpServer("edge", command, cwd=script.parent, start_timeout=60)
    started.append(server)
    return server


def deleted_files_over(size: int) -> list[str]:
    """This process's open files that were unlinked and hold more than `size` bytes."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            bytes_held = os.fstat(int(fd)).st_size
        except OSError:
            continue
        if target.endswith("(deleted)") and bytes_held > size:
            found.append(f"{target}: {bytes_held:,} bytes")
    return found


def test_a_server_that_floods_stderr_keeps_only_its_end_and_still_works(started, script):
    server = edge_server(started, script, "flood-serve")
    (tool,) = server.tools()
    ring = server._stderr
    assert ring is not None
    assert ring.mark() >= FLOOD_MB << 20  # The flood happened, and all of it was read.
    assert ring.kept <= RING_BYTES
    assert deleted_files_over(1 << 20) == []
    assert asyncio.run(tool.acall({})).content == "pong"


def test_a_server_that_floods_stderr_and_exits_quotes_its_last_words(started, script):
    server = edge_server(started, script, "flood-exit")
    with pytest.raises(UserCodeError) as failed:
        server.tools()
    assert failed.value.code == MCP_SERVER_FAILED
    assert server._stderr is not None and server._stderr.written >= FLOOD_MB << 20
    assert failed.value.params["stderr"].endswith("LAST WORDS: the flood is over")
    assert len(failed.value.params["stderr"]) <= 1500
    assert deleted_files_over(1 << 20) == []


def test_a_tool_list_too_deep_to_parse_is_a_typed_error_at_once(started, script):
    # 120 levels: the SDK's server still writes it (150 it cannot); its client cannot read it.
    assert len(edge_server(started, script, "plain", depth=60).tools()) == 1  # The control.
    server = edge_server(started, script, "plain", depth=120)
    with pytest.raises(UserCodeError) as unreadable:
        server.tools()
    error = unreadable.value
    assert error.code == MCP_TOOLS_UNREADABLE
    assert error.params["server"] == "edge"
    detail = error.params["detail"]
    # Told what failed, not "no answer within 60 s" after the whole start timeout.
    assert detail.startswith("could not start: its list of tools could not be read")
    assert "recursion limit" in detail and "no answer" not in detail
    assert "the MCP server 'edge'" in str(error)
