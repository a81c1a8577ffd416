"""The registry's MCP servers: one `McpServer` per entry, started on first use, closed on reload.

A registered server is kept by name; a server a task recorded but the registry no longer
names is kept by its spec, so tasks that share it share one subprocess. `close_all()` (on
reload, or when the process's registry is replaced) stops every one of them: the next listing
or build starts a new one, which is how "Reload my code" restarts a server that died.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from agent_core.errors import UserCodeError, UserError
from agent_core.tools.base import BaseTool
from agent_core.tools.mcp import McpServer

__all__ = ["McpEntry", "McpServers"]


@dataclass(frozen=True)
class McpEntry:
    """One registered MCP server: its tools, or why it cannot be used."""

    name: str
    spec: str
    """The command line or URL, as registered."""
    source: str
    """Where it was registered: `--mcp`, a project file's path, or a task's record."""
    tools: tuple[BaseTool, ...] = ()
    error: UserCodeError | None = None

    @property
    def ok(self) -> bool:
        """Whether the server started and listed its tools."""
        return self.error is None


class McpServers:
    """The MCP servers of one registry, by name (registered) and by spec (recorded)."""

    def __init__(self, project: Path) -> None:
        self._project = project
        self._lock = threading.Lock()
        self._by_name: dict[str, McpServer] = {}
        self._by_spec: dict[str, McpServer] = {}

    def entries(self, registered: dict[str, tuple[str, str]]) -> list[McpEntry]:
        """An entry for each registered `name -> (spec, source)`, its server started.

        The servers start side by side; each entry waits for its own.
        """
        servers = {
            name: self._server(name, spec, named=True) for name, (spec, _) in registered.items()
        }
        for server in servers.values():
            if isinstance(server, McpServer):
                server.start()
        return [
            self._entry(name, spec, source, servers[name])
            for name, (spec, source) in registered.items()
        ]

    def has(self, name: str) -> bool:
        """Whether registered server `name` was started (and not stopped since)."""
        with self._lock:
            return name in self._by_name

    def tools(self, name: str, spec: str, *, named: bool) -> list[BaseTool]:
        """The tools of server `name` (registered when `named`, else recorded with `spec`).

        Raises:
            UserCodeError: The server cannot be used (code `mcp_server_failed`).
        """
        server = self._server(name, spec, named=named)
        if isinstance(server, UserCodeError):
            raise server
        return list(server.tools())

    def close_all(self) -> None:
        """Stop every server (their subprocesses end); the next use starts new ones."""
        with self._lock:
            servers = [*self._by_name.values(), *self._by_spec.values()]
            self._by_name, self._by_spec = {}, {}
        for server in servers:
            server.close()

    def _server(self, name: str, spec: str, *, named: bool) -> McpServer | UserCodeError:
        with self._lock:
            kept = self._by_name if named else self._by_spec
            key = name if named else spec
            server = kept.get(key)
            if server is not None and server.spec == spec:
                return server
            try:
                kept[key] = McpServer(name, spec, cwd=self._project)
            except UserError as exc:
                return UserCodeError(str(exc), target=spec)
        if server is not None:  # Registered anew under the same name: stop the old one.
            server.close()
        return kept[key]

    @staticmethod
    def _entry(name: str, spec: str, source: str, server: McpServer | UserCodeError) -> McpEntry:
        if isinstance(server, UserCodeError):
            return McpEntry(name, spec, source, error=server)
        try:
            tools = server.tools()
        except UserCodeError as exc:
            return McpEntry(name, spec, source, error=exc)
        if server.failure is not None:  # It started, then stopped: say so beside its tools.
            return McpEntry(name, spec, source, tools=tuple(tools), error=server.failure_error())
        return McpEntry(name, spec, source, tools=tuple(tools))
