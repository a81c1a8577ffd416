"""Tools from MCP servers: a server started (or reached) through the official `mcp` SDK.

An `McpServer` is one server the user named, `time = "uvx mcp-server-time"`: a command run as
a subprocess that speaks MCP over its stdin and stdout, or an `http://` / `https://` URL of a
streamable-HTTP endpoint. Its tools are `McpTool`s, `BaseTool`s like any other: the model is
told the server's own name, description and JSON schema, the arguments go to the server as
the model (or the person who edited the call) wrote them, and the server validates them. A
tool the server marks read-only (`readOnlyHint`) changes nothing; any other tool records an
`IrreversibleEffect` for each call, so undoing its step warns that the call cannot be taken
back.

Lifecycle. A server starts on first use (its tools listed, or a call), and its session lives
on the MCP loop (`_mcp_loop`), a daemon thread of its own, so it outlives Streamlit's
per-rerun threads and never blocks the runtime's loop. `close()` ends the session and the
subprocess (the SDK closes its stdin, then terminates it); so does the process's exit.

Failures. A server that cannot start, or that dies, stays failed: every listing or call
raises an error with code `mcp_server_failed` that names the server and ends with what it
last wrote to stderr, until the user's code is reloaded ("Reload my code" in the app), which
closes this object and starts a new one. Listing and building raise it as a `UserCodeError`
(the app shows it beside the user's other code); a call raises it as a `ToolError`, which
fails the step and leaves the task as it was. A call with no answer within `call_timeout`
raises code `mcp_call_timeout` (the server keeps running; run the step again). What the tool
itself answers, an error included, is the tool's output, which the model reads.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import json
import re
import shlex
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent_core.effects import IrreversibleEffect, record_effect
from agent_core.errors import ToolError, UserCodeError, UserError
from agent_core.extras import MissingExtraError, require
from agent_core.llms.base import RAW_TOOL_ARGUMENTS, ToolSpec
from agent_core.tools import _mcp_session
from agent_core.tools._mcp_loop import on_mcp_loop, submit
from agent_core.tools._mcp_stderr import StderrRing
from agent_core.tools.base import MAX_OUTPUT_CHARS, BaseTool, ToolMetadata
from agent_core.types import ToolOutput

__all__ = [
    "MCP_CALL_TIMEOUT",
    "MCP_SERVER_FAILED",
    "MCP_TOOLS_UNREADABLE",
    "McpServer",
    "McpTool",
    "McpToolMetadata",
    "check_server_spec",
    "is_url",
]

MCP_SERVER_FAILED = "mcp_server_failed"
"""The code of a server that could not start, or stopped (see the module's docstring)."""
MCP_CALL_TIMEOUT = "mcp_call_timeout"
"""The code of a call the server did not answer in time."""
MCP_TOOLS_UNREADABLE = "mcp_tools_unreadable"
"""The code of a server whose tool list (or handshake) answer the MCP SDK could not parse."""
RESTART_HINT = (
    'click "Reload my code" in the app to start it again (or restart `stepwise ui` / '
    "`stepwise serve`)"
)

_RELOADED = "was stopped when your code was reloaded"
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_STDERR_TAIL = 1500
_CLOSE_TIMEOUT = 10.0  # The SDK's own shutdown waits at most about 4.5 s for a server.


def is_url(spec: str) -> bool:
    """Whether a server spec is a streamable-HTTP URL rather than a command."""
    return spec.startswith(("http://", "https://"))


def check_server_spec(spec: str) -> list[str]:
    """The command line of a stdio spec as words ([] for a URL).

    Raises:
        UserError: The spec is empty, or its quotes do not close.
    """
    if is_url(spec):
        return []
    try:
        words = shlex.split(spec)
    except ValueError as exc:
        raise UserError(f"MCP server command {spec!r} cannot be split into words: {exc}") from None
    if not words:
        raise UserError(
            'an MCP server needs a command ("uvx mcp-server-time") or a URL '
            '("http://127.0.0.1:8000/mcp")'
        )
    return words


class _AnyArguments(BaseModel):
    """The arguments of an MCP tool: whatever the server's schema allows (it validates them)."""

    model_config = ConfigDict(extra="allow")


class McpToolMetadata(ToolMetadata):
    """An MCP tool as the model is told about it: the server's own JSON schema."""

    fn_schema: type[BaseModel] = _AnyArguments
    parameters: dict[str, Any]
    """The server's `inputSchema` for the tool's arguments."""
    server: str
    """The name of the server the tool comes from."""
    remote_name: str
    """The tool's name on the server (the model's may differ: providers allow fewer names)."""
    read_only: bool = False
    """The server says a call changes nothing (`readOnlyHint`)."""

    def to_spec(self) -> ToolSpec:
        """The tool with the server's schema, as an object schema every provider takes."""
        parameters = {"type": "object", "properties": {}, **self.parameters}
        return ToolSpec(name=self.name, description=self.description, parameters=parameters)


class McpTool(BaseTool):
    """One tool of an MCP server; a call goes to the server, which runs it."""

    def __init__(self, server: McpServer, metadata: McpToolMetadata) -> None:
        """Wrap `metadata` of a tool that `server` listed (see `McpServer.tools`)."""
        self._server = server
        self._metadata = metadata

    @property
    def metadata(self) -> McpToolMetadata:
        """The tool's name, description and the server's schema."""
        return self._metadata

    @property
    def server(self) -> McpServer:
        """The server the tool comes from."""
        return self._server

    async def acall(self, args: dict[str, Any], *, call_id: str = "") -> ToolOutput:
        """Call the tool on its server with `args` as given.

        Raises:
            ToolError: The server could not start or has stopped (`mcp_server_failed`), or
                did not answer in time (`mcp_call_timeout`): the step fails.
        """
        raw: object = {} if args is None else args
        if not isinstance(raw, Mapping):
            problem = f"arguments must be a JSON object, got {type(raw).__name__}"
            return self._output({}, f"Error: {self.name}: {problem}.", call_id, is_error=True)
        arguments = json.loads(json.dumps(dict(raw), default=repr))
        if set(arguments) == {RAW_TOOL_ARGUMENTS}:
            problem = "the arguments were not valid JSON; send a JSON object"
            return self._output(
                arguments, f"Error: {self.name}: {problem}.", call_id, is_error=True
            )
        reply = await self._server.call(self._metadata.remote_name, arguments, tool=self.name)
        if reply.ran and not self._metadata.read_only:
            shown = json.dumps(arguments, ensure_ascii=False)[:200]
            where = f"MCP server {self._server.name!r}"
            record_effect(IrreversibleEffect(tool=self.name, description=f"{where}, {shown}"))
        return self._output(arguments, reply.content, call_id, is_error=reply.is_error)

    def _output(
        self, args: dict[str, Any], content: str, call_id: str, *, is_error: bool
    ) -> ToolOutput:
        if len(content) > MAX_OUTPUT_CHARS:
            cut = len(content) - MAX_OUTPUT_CHARS
            content = f"{content[:MAX_OUTPUT_CHARS]}\n[... {cut} more characters]"
        return ToolOutput(
            tool_name=self.name, args=args, content=content, is_error=is_error, call_id=call_id
        )


@dataclass(frozen=True)
class _Reply:
    content: str
    is_error: bool
    ran: bool
    """Whether the tool ran (a protocol error, such as an unknown tool, means it did not)."""


class McpServer:
    """One MCP server: started on first use, its tools listed once, closed by `close()`.

    Args:
        name: The name the user gave it (`--mcp NAME=...`).
        spec: A command line (`uvx mcp-server-time --local-timezone UTC`) or an `http(s)://`
            URL of a streamable-HTTP endpoint.
        cwd: The folder a command runs in (the project folder).
        start_timeout: Seconds to start and list the tools before it counts as failed.
        call_timeout: Seconds a call may take.

    Raises:
        UserError: The spec is empty, or its quotes do not close.
    """

    def __init__(
        self,
        name: str,
        spec: str,
        *,
        cwd: str | Path | None = None,
        start_timeout: float = 30.0,
        call_timeout: float = 120.0,
    ) -> None:
        self.name = name
        self.spec = spec
        self.cwd = Path(cwd) if cwd is not None else None
        self.start_timeout = start_timeout
        self.call_timeout = call_timeout
        self._words = check_server_spec(spec)
        self._lock = threading.Lock()
        self._started: concurrent.futures.Future[list[McpTool]] | None = None
        self._session: _mcp_session.Session | None = None
        self._failure: str | None = None
        self._failure_code = MCP_SERVER_FAILED  # Of the failure kept.
        self._closed = False
        self._stderr: StderrRing | None = None
        self._stderr_seen = 0
        """How much of stderr was written before the last answer: a failure quotes the rest."""
        _open_servers.add(self)

    def __repr__(self) -> str:
        return f"McpServer({self.name!r}, {self.spec!r})"

    @property
    def failure(self) -> str | None:
        """Why the server cannot be used ("stopped (...)"); None while it works or is unstarted."""
        return self._failure

    def start(self) -> None:
        """Begin starting the server, without waiting (`tools()` waits for it)."""
        self._start()

    def failure_error(self) -> UserCodeError | None:
        """Why the server cannot be used, as `tools()` would raise it; None while it works."""
        failure = self._failure
        return None if failure is None else self._start_error(failure)

    def tools(self) -> list[McpTool]:
        """The server's tools, starting it first if need be (blocks up to `start_timeout`).

        Raises:
            UserCodeError: The server could not start or list its tools, or has stopped
                (code `mcp_server_failed`); it stays so until the user's code is reloaded.
        """
        if on_mcp_loop():
            raise RuntimeError("McpServer.tools() blocks: call it off the MCP loop")
        started = self._start()
        try:
            return list(started.result(timeout=self.start_timeout + _CLOSE_TIMEOUT))
        except _mcp_session.SessionFailed as exc:
            raise self._start_error(str(exc)) from None
        except concurrent.futures.TimeoutError:
            raise self._start_error("could not start: no answer in time") from None
        except concurrent.futures.CancelledError:
            raise self._start_error(_RELOADED) from None

    async def call(self, remote_name: str, arguments: dict[str, Any], *, tool: str) -> _Reply:
        """Call `remote_name` with `arguments` on the running server.

        Raises:
            ToolError: `mcp_server_failed` or `mcp_call_timeout` (see the module docstring).
        """
        with self._lock:
            session, failure = self._session, self._failure
        if failure is not None or session is None:
            raise self._call_error(failure or "was never started", tool=tool)
        try:
            result = await asyncio.wrap_future(
                submit(session.call(remote_name, arguments, seconds=self.call_timeout))
            )
        except _mcp_session.SessionFailed as exc:
            raise self._call_error(str(exc), tool=tool) from None
        except TimeoutError:
            self._mark_stderr()
            raise ToolError(
                f"the MCP server {self.name!r} did not answer the call of {tool} within "
                f"{self.call_timeout:g} s",
                hint=f"run the step again; if the server hangs, {RESTART_HINT}",
                tool_name=tool,
                remedy="retry",
                code=MCP_CALL_TIMEOUT,
                params={"server": self.name, "timeout_s": self.call_timeout},
            ) from None
        self._mark_stderr()
        return _Reply(content=result.content, is_error=result.is_error, ran=result.ran)

    def close(self) -> None:
        """End the session and stop the subprocess; later use says it was closed."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._failure = self._failure or _RELOADED
            session, self._session = self._session, None
            started = self._started
        _open_servers.discard(self)
        if session is not None:
            waiting = submit(session.close())
            try:
                waiting.result(timeout=_CLOSE_TIMEOUT)
            except (concurrent.futures.TimeoutError, _mcp_session.SessionFailed):
                pass  # The SDK's shutdown kills the process tree; nothing more to do here.
        elif started is not None:
            started.cancel()  # Still starting: cancelling the start closes what it opened.
        stderr, self._stderr = self._stderr, None  # Closed: nothing of it is quoted any more.
        if stderr is not None:
            stderr.close()

    # -- internals

    def _start(self) -> concurrent.futures.Future[list[McpTool]]:
        with self._lock:
            if self._closed:
                failed: concurrent.futures.Future[list[McpTool]] = concurrent.futures.Future()
                failed.set_exception(_mcp_session.SessionFailed(self._failure or _RELOADED))
                return failed
            if self._started is None:
                try:
                    require("mcp", feature="MCP servers")
                except MissingExtraError as exc:
                    self._failure = f"could not start: {exc}"
                    self._started = concurrent.futures.Future()
                    self._started.set_exception(_mcp_session.SessionFailed(self._failure))
                    return self._started
                if self._stderr is None and not is_url(self.spec):
                    self._stderr = StderrRing()
                self._started = submit(self._open())
            return self._started

    async def _open(self) -> list[McpTool]:
        try:
            session = await _mcp_session.Session.open(
                self._words or self.spec,
                url=is_url(self.spec),
                cwd=self.cwd,
                stderr=self._stderr.writer if self._stderr is not None else None,
                seconds=self.start_timeout,
                on_lost=self._lost,
            )
        except _mcp_session.SessionFailed as exc:
            self._failure = str(exc)
            if exc.reason == _mcp_session.TOOLS_UNREADABLE:
                self._failure_code = MCP_TOOLS_UNREADABLE
            raise
        finally:
            if self._stderr is not None:  # The server (if any) has the pipe: its exit ends it.
                self._stderr.spawned()
        with self._lock:
            closed = self._closed
            if not closed:
                self._session = session
        if closed:  # Closed while it started: do not leave it running.
            await session.close()
            raise _mcp_session.SessionFailed(self._failure or _RELOADED)
        self._mark_stderr()
        return [McpTool(self, self._metadata(listed)) for listed in session.tools]

    def _lost(self, detail: str) -> None:
        with self._lock:
            if not self._closed:
                self._failure = self._failure or detail

    def _metadata(self, listed: _mcp_session.ListedTool) -> McpToolMetadata:
        name = _NAME_UNSAFE.sub("_", listed.name)[:64] or "tool"
        return McpToolMetadata(
            name=name,
            description=listed.description,
            parameters=listed.input_schema,
            server=self.name,
            remote_name=listed.name,
            read_only=listed.read_only,
            side_effects=not listed.read_only,
        )

    def _mark_stderr(self) -> None:
        if self._stderr is not None:
            self._stderr_seen = self._stderr.mark()

    def _stderr_tail(self) -> str:
        """The end of what the server wrote to stderr since its last answer."""
        if self._stderr is None:
            return ""
        return self._stderr.tail(_STDERR_TAIL, since=self._stderr_seen)

    def _start_error(self, detail: str) -> UserCodeError:
        """The error of a server that cannot list its tools (the app shows it in the form)."""
        message, params = self._failure_facts(detail)
        hint = f"fix the server if it needs it, then {RESTART_HINT}"
        return UserCodeError(
            message,
            target=self.spec,
            hint=hint,
            remedy="reload_code",
            code=self._failure_code,
            params=params,
        )

    def _call_error(self, detail: str, *, tool: str) -> ToolError:
        """The error of a call the server cannot take: it fails the step."""
        message, params = self._failure_facts(detail, tool=tool)
        hint = f"fix the server if it needs it, then {RESTART_HINT}, and run the step again"
        return ToolError(
            message,
            tool_name=tool,
            hint=hint,
            remedy="reload_code",
            code=self._failure_code,
            params=params,
        )

    def _failure_facts(self, detail: str, *, tool: str = "") -> tuple[str, dict[str, str]]:
        """The message and params of `mcp_server_failed`; the first failure is the one kept."""
        with self._lock:
            self._failure = self._failure or detail
            detail = self._failure
        stderr = self._stderr_tail()
        what = "URL" if is_url(self.spec) else "command"
        message = f"the MCP server {self.name!r} ({what} {self.spec}) {detail}"
        params = {"server": self.name, "spec": self.spec, "detail": detail}
        if tool:
            message = f"{message}, so {tool} did not run"
        if stderr:
            message = f"{message}. It wrote:\n{stderr}\n"
            params["stderr"] = stderr
        return message, params


_open_servers: weakref.WeakSet[McpServer] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Stop every server still running when the process exits."""
    for server in list(_open_servers):
        server.close()
