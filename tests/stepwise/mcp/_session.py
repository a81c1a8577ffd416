"""Helpers of the MCP face's tests: a tool call's text, a free port, a served process."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from mcp import ClientSession
from mcp.types import CallToolResult

__all__ = ["call", "free_port", "serve_http", "text_of"]


def text_of(result: CallToolResult) -> str:
    """The text a tool answered."""
    return "\n".join(block.text for block in result.content if block.type == "text")


async def call(session: ClientSession, tool: str, /, **arguments: object) -> str:
    """Call a tool that must succeed; its text."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return text_of(result)


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve_http(folder: Path, port: int, env: dict[str, str]) -> subprocess.Popen:
    """`stepwise mcp --http` on `port` in `folder`, once it answers."""
    command = [sys.executable, "-m", "stepwise.cli", "mcp", "--http", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--db", str(folder / "t.db")],
        cwd=folder,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"stepwise mcp exited: {process.stderr.read()}")  # type: ignore[union-attr]
        try:
            httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=2)
            return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError("stepwise mcp --http did not answer within 60 s")
