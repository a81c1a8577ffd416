"""One MCP session on the MCP loop, through the official SDK's `mcp.Client`.

Everything here runs on the MCP loop (`_mcp_loop`). The SDK's client must be closed by the
task that opened it, so a keeper task opens it, hands it over and waits for the word to close
it; listings and calls run in tasks of their own beside it. The SDK's failures become either
`SessionFailed` (the server cannot be used: it did not start, or the connection is gone) or a
reply the model reads (the tool, or the server about that one call, said no). The `mcp`
package is imported only here, when a server starts.
"""

from __future__ import annotations

import asyncio
import errno
import importlib.metadata
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

__all__ = ["TOOLS_UNREADABLE", "CallResult", "ListedTool", "Session", "SessionFailed"]

_PAGES = 100
"""Most pages of a tool listing read: a server whose cursor never ends cannot hang a start."""


TOOLS_UNREADABLE = "tools_unreadable"
"""`SessionFailed.reason` of a server whose answer to the handshake or listing did not parse."""


class SessionFailed(Exception):
    """The server cannot be used; the message says why as a predicate ("could not start: ...").

    `reason` is `TOOLS_UNREADABLE` when it answered, but not in a form the SDK could read.
    """

    def __init__(self, detail: str, *, reason: str | None = None) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True)
class ListedTool:
    """A tool as the server listed it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


@dataclass(frozen=True)
class CallResult:
    """What one call gave, as the model reads it."""

    content: str
    is_error: bool
    ran: bool


class Session:
    """A started server's session: its tools, calls, and `close()`."""

    def __init__(
        self,
        client: Any,
        *,
        keeper: asyncio.Task[None],
        stop: asyncio.Event,
        tools: list[ListedTool],
        on_lost: Callable[[str], None],
    ) -> None:
        self._client = client
        self._keeper = keeper
        self._stop = stop
        self.tools = tools
        self._on_lost = on_lost

    @classmethod
    async def open(
        cls,
        target: list[str] | str,
        *,
        url: bool,
        cwd: Path | None,
        stderr: TextIO | None,
        seconds: float,
        on_lost: Callable[[str], None],
    ) -> Session:
        """Start the server (`target`: a command's words, or a URL) and list its tools.

        Raises:
            SessionFailed: It did not start, or did not list its tools, within `seconds`.
        """
        garbled: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        client = _client(target, url=url, cwd=cwd, stderr=stderr, timeout=seconds, garbled=garbled)
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        keeper = asyncio.create_task(_keep(client, ready, stop, on_lost))
        try:
            await _unless_garbled(ready, garbled, seconds, what="its answer to the handshake")
            listing = asyncio.ensure_future(_list_tools(client))
            tools = await _unless_garbled(listing, garbled, seconds, what="its list of tools")
        except BaseException as exc:
            stop.set()
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)
            if isinstance(exc, asyncio.CancelledError):
                raise
            if isinstance(exc, TimeoutError):
                raise SessionFailed(f"could not start: no answer within {seconds:g} s") from None
            if isinstance(exc, SessionFailed):
                raise
            raise SessionFailed(_start_failure(exc, target=target, url=url)) from None
        return cls(client, keeper=keeper, stop=stop, tools=tools, on_lost=on_lost)

    async def call(self, name: str, arguments: dict[str, Any], *, seconds: float) -> CallResult:
        """Call tool `name`.

        Raises:
            SessionFailed: The connection is gone (the server died).
            TimeoutError: No answer within `seconds`.
        """
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError

        if self._keeper.done():  # The client's context ended under it: nothing to call.
            raise self._lost("stopped (its session ended)")
        try:
            async with asyncio.timeout(seconds):
                result = await self._client.call_tool(name, arguments, read_timeout_seconds=seconds)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise TimeoutError(exc.message) from None
            if exc.code != CONNECTION_CLOSED:
                return CallResult(f"Error: {name}: {exc.message}", is_error=True, ran=False)
            raise self._lost("stopped (its connection closed)") from None
        except TimeoutError:  # An OSError too: not a lost connection, the server still runs.
            raise
        except ValidationError as exc:
            detail = f"its reply did not follow the MCP protocol ({exc.error_count()} errors)"
            return CallResult(f"Error: {name}: {detail}", is_error=True, ran=True)
        except (OSError, EOFError) as exc:
            raise self._lost(f"stopped ({_describe(exc)})") from None
        except Exception as exc:
            if not _is_connection_error(exc):
                raise
            raise self._lost(f"stopped ({_describe(exc)})") from None
        return CallResult(_content_text(result), is_error=bool(result.is_error), ran=True)

    async def close(self) -> None:
        """Ask the keeper to close the client, and wait until it has (the process is gone)."""
        self._stop.set()
        await asyncio.gather(self._keeper, return_exceptions=True)

    def _lost(self, detail: str) -> SessionFailed:
        self._on_lost(detail)
        return SessionFailed(detail)


def _client(
    target: list[str] | str,
    *,
    url: bool,
    cwd: Path | None,
    stderr: TextIO | None,
    timeout: float,
    garbled: asyncio.Future[str],
) -> Any:
    from mcp import Client, Implementation, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def on_message(message: Any) -> None:
        # The SDK hands over a message it could not parse and waits on: an answer among them
        # leaves its request waiting for the whole timeout. Say so through `garbled` at once.
        if isinstance(message, Exception) and not garbled.done():
            gist = _unreadable_answer(message)
            if gist is not None:
                garbled.set_result(gist)

    info = Implementation(name="stepwise", version=_version())
    options: dict[str, Any] = {"client_info": info, "message_handler": on_message}
    if url:
        assert isinstance(target, str)
        return Client(target, read_timeout_seconds=timeout, **options)
    command, *args = target
    params = StdioServerParameters(command=command, args=args, cwd=cwd)
    transport = stdio_client(params, errlog=stderr) if stderr is not None else stdio_client(params)
    return Client(transport, read_timeout_seconds=timeout, **options)


def _unreadable_answer(exc: Exception) -> str | None:
    """The parse error's gist when `exc` is the SDK failing to read an answer, else None.

    An answer is a JSON-RPC response; other lines the SDK could not parse (a server's stray
    print to stdout) change nothing, as before.
    """
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError) or not exc.errors():
        return None
    first = exc.errors()[0]
    line = first.get("input")
    if not isinstance(line, str):
        return None
    try:
        message = json.loads(line)
    except RecursionError:  # Deeper than Python's parser goes: judge by its opening.
        message = {"id": None, "result": None} if '"id"' in line[:200] else None
    except ValueError:
        return None
    if not isinstance(message, dict) or "id" not in message:
        return None
    if "result" not in message and "error" not in message:
        return None
    return str(first.get("msg", "not valid"))


async def _unless_garbled(
    waiting: asyncio.Future[Any], garbled: asyncio.Future[str], seconds: float, *, what: str
) -> Any:
    """`waiting`'s result; `SessionFailed` at once if an answer could not be read meanwhile.

    Raises:
        SessionFailed: An answer did not parse (`TOOLS_UNREADABLE`).
        TimeoutError: Neither within `seconds`.
    """
    done, _ = await asyncio.wait(
        {waiting, garbled}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED
    )
    if waiting in done:
        return waiting.result()
    if not waiting.done():
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
    if garbled in done:
        detail = f"could not start: {what} could not be read ({garbled.result()})"
        raise SessionFailed(detail, reason=TOOLS_UNREADABLE)
    raise TimeoutError


def _version() -> str:
    try:
        return importlib.metadata.version("stepwise")
    except importlib.metadata.PackageNotFoundError:
        return "0"


async def _keep(
    client: Any, ready: asyncio.Future[None], stop: asyncio.Event, on_lost: Callable[[str], None]
) -> None:
    """Open `client`, say so through `ready`, and hold it open until `stop` is set."""
    try:
        async with client:
            ready.set_result(None)
            await stop.wait()
    except asyncio.CancelledError:
        if not ready.done():
            ready.cancel()
        raise
    except BaseException as exc:  # Reported through `ready`, or as the connection lost.
        if not ready.done():
            ready.set_exception(exc)
        elif not stop.is_set():
            on_lost(f"stopped ({_describe(exc)})")


async def _list_tools(client: Any) -> list[ListedTool]:
    tools: list[ListedTool] = []
    cursor: str | None = None
    for _ in range(_PAGES):
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            annotations = tool.annotations
            read_only = bool(annotations is not None and annotations.read_only_hint)
            title = annotations.title if annotations is not None else None
            description = tool.description or title or tool.title or ""
            tools.append(ListedTool(tool.name, description, dict(tool.input_schema), read_only))
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _content_text(result: Any) -> str:
    """A tool result as text: its text parts, other parts named; else its structured content."""
    parts = [_block_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, default=str)
    return "\n".join(parts)


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        size = len(block.data) * 3 // 4
        return f"[{kind} {block.mime_type}, {size:,} bytes, not shown]"
    if kind == "resource_link":
        return f"[resource {block.uri}]"
    if kind == "resource":
        text = getattr(block.resource, "text", None)
        return str(text) if text is not None else f"[resource {block.resource.uri}, not shown]"
    return f"[{kind or type(block).__name__} content, not shown]"


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups that is not a cancellation."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def _describe(exc: BaseException) -> str:
    exc = _leaf(exc)
    message = getattr(exc, "message", None) or str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _is_connection_error(exc: BaseException) -> bool:
    import anyio

    gone = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)
    leaf = _leaf(exc)
    # The SDK's HTTP client is httpx2 (mcp 2) or httpx (mcp 1): match its transport errors by
    # name rather than import either.
    transport = any(cls.__name__ == "TransportError" for cls in type(leaf).__mro__)
    return transport or isinstance(leaf, gone)


def _start_failure(exc: BaseException, *, target: list[str] | str, url: bool) -> str:
    """Why a server did not start, as a predicate: "could not start: the command ..."."""
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    leaf = _leaf(exc)
    if isinstance(leaf, FileNotFoundError) and not url:
        return f"could not start: there is no command {target[0]!r} (is it installed, on PATH?)"
    if isinstance(leaf, OSError) and leaf.errno == errno.EACCES and not url:
        return f"could not start: the command {target[0]!r} may not be run (permission denied)"
    if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
        if url:
            return "could not be reached: the connection closed before it answered"
        return "could not start: it exited before it answered as an MCP server"
    if url and _is_connection_error(leaf):
        return f"could not be reached: {_describe(leaf)}"
    return f"could not start: {_describe(leaf)}"
