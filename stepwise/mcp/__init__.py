"""`stepwise mcp`: the debugger as MCP tools for coding agents.

A face like the app and `stepwise serve`: it holds a host (the store, a runner per agent) and
offers its tasks as tools (`DebuggerTools`) on the official MCP SDK's server, over stdio or
streamable HTTP behind the HTTP faces' guard. `AGENTS.md` beside this file tells a coding
agent how to debug with them.
"""

from stepwise.mcp.server import build_server, error_result, http_app
from stepwise.mcp.tools import TOOL_DESCRIPTIONS, DebuggerTools

__all__ = ["TOOL_DESCRIPTIONS", "DebuggerTools", "build_server", "error_result", "http_app"]
