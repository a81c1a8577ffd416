"""The MCP server: the debugger's tools on the official SDK's `MCPServer`, over stdio or HTTP.

Each tool of `DebuggerTools` is registered under its name with a description saying when to
use it; its answer is plain text. An error of the runtime comes back as a tool error (the
call's `isError`) whose text starts with the error's stable `code`, then its message and hint,
and whose structured content is `{"error": {"code", "message", "hint"}}`, as the HTTP API's
error body: a coding agent reads it and fixes the call, and nothing else in the session breaks.

Over HTTP the streamable-HTTP app sits behind the same guard as `stepwise serve`: the browser
guard (Host allow-list, no other page's state-changing requests, JSON bodies), then the token
gate (`STEPWISE_API_TOKEN`) and the body bound. The SDK's own Host check is off: the browser
guard does it, with the names `STEPWISE_ALLOWED_HOSTS` allows and the same error codes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent
from starlette.types import ASGIApp

from agent_core.errors import AgentCoreError
from stepwise.http.browser_guard import BrowserGuard
from stepwise.http.security import GateMiddleware
from stepwise.mcp.tools import TOOL_DESCRIPTIONS, DebuggerTools

__all__ = ["INSTRUCTIONS", "MCP_PATH", "build_server", "error_result", "http_app"]

MCP_PATH = "/mcp"
"""Where the streamable-HTTP endpoint is served."""
MAX_BODY_BYTES = 1_000_000
"""Largest request body read over HTTP (one JSON-RPC message; a case or trace is a path)."""

INSTRUCTIONS = """\
Stepwise is a step-by-step debugger for LLM agents. Tasks live in a database shared with the
Stepwise app. To debug: list_tasks (or create_task), show_task to find the failing step and
what the model sees next, show_step for what a step's model saw; then steer: run_step with an
input, edit_step, run_until with before_tools, approve or reject a tool call, undo, fork; compare
two runs; save_test once the run is right and run_tests after changing code."""


def error_result(exc: AgentCoreError) -> CallToolResult:
    """A runtime error as a tool error: its code first, then its message and hint."""
    text = f"{exc.code}: {exc.message}"
    if exc.hint:
        text += f"\nhint: {exc.hint}"
    error = {"code": exc.code, "message": exc.message, "hint": exc.hint}
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={"error": error},
        is_error=True,
    )


def _answering_errors(method: Callable[..., str]) -> Callable[..., Any]:
    """`method`, with a runtime error returned as a tool error instead of raised.

    The SDK would word a raised error itself ("Error executing tool ..."), dropping its code.
    """

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except AgentCoreError as exc:
            return error_result(exc)

    return call


def build_server(tools: DebuggerTools, *, only: Iterable[str] | None = None) -> MCPServer:
    """The MCP server offering `tools` (all of them, or the names in `only`).

    Tools run on a worker thread of the SDK (they are sync): the runtime's sync calls hand
    their work to its own loop, never the server's.

    Raises:
        ValueError: `only` names a tool that does not exist.
    """
    names = list(TOOL_DESCRIPTIONS) if only is None else list(only)
    unknown = [name for name in names if name not in TOOL_DESCRIPTIONS]
    if unknown:
        raise ValueError(f"no such tools: {', '.join(unknown)}")
    server = MCPServer("stepwise", instructions=INSTRUCTIONS, log_level="WARNING")
    for name in names:
        server.add_tool(
            _answering_errors(getattr(tools, name)),
            name=name,
            description=TOOL_DESCRIPTIONS[name],
            structured_output=False,
        )
    return server


def http_app(server: MCPServer, *, token: str | None, allowed_hosts: Iterable[str] = ()) -> ASGIApp:
    """The streamable-HTTP app at `MCP_PATH`, behind the browser guard and the token gate."""
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=MAX_BODY_BYTES,
    )
    gated = GateMiddleware(app, token=token, max_body_bytes=MAX_BODY_BYTES)
    # Outermost: a foreign page is refused before the token is checked, as in `serve`.
    return BrowserGuard(gated, allowed_hosts=frozenset(allowed_hosts))
