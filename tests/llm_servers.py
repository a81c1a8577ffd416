"""Loopback model servers that speak OpenAI's and Anthropic's wire formats over real sockets.

The adapters' unit tests hand the SDKs an httpx `MockTransport`, which opens no socket, so they
cannot see what only a real connection pool shows: a keep-alive connection bound to the event
loop that opened it. These servers listen on 127.0.0.1 (a free port), keep connections alive
between requests (HTTP/1.1), stream Server-Sent Events with chunked transfer encoding, and count
the TCP connections they accept, so a test can assert that the pool was reused.

What a server answers is scripted per test:

- `Reply(text=..., tool_calls=[ReplyToolCall("add", {"a": 1, "b": 2})])`: one model reply;
  `delay_s` waits before answering and between streamed chunks (to stop, interrupt or reload
  a step mid-call); `status` and `error` answer with an error in the provider's shape.
- `replies`: a list consumed in order; `policy`: a callable `(request_json) -> Reply | str`
  used once the list is spent. With neither, `default_policy` drives a function-calling agent:
  it calls `add` (or the first tool offered), then answers with the tool's result.
- A script that runs out, or a policy that raises, answers 500 and records the error in
  `errors`; leaving the `with` block (or the fixture's teardown) then fails the test.

Quirks of real local servers (llama.cpp's, as `llama-cpp-python[server]` behaves) are switched
on per test: `OpenAIServer(quirks={"null_content_500", ...})`, or `server.quirks.add(...)` /
`.discard(...)` mid-test. With none set the server behaves as above. `server.quirk_hits[name]`
counts how often each one fired, so a test can assert its fault was injected.

- `"tools_need_tool_choice"`: tools are ignored unless the request has `tool_choice`: the reply
  is prose (the script's or policy's reply to the request without its tools, tool calls
  dropped).
- `"null_content_500"`: an assistant message with `"content": null` gets HTTP 500 with the
  server's own error text (`NULL_CONTENT_ERROR`, the useful part at its end), every time.
- `"broken_stream"`: a streamed request gets its 200 headers, then the body ends and the
  connection closes with no event sent (as llama-cpp-python's server does when generation
  fails after the stream opened); no reply is consumed from the script.
- `"endless_reply"`: the reply never ends: words stream (or a non-streamed call waits) until the
  client leaves, unless the request caps it with `max_tokens` / `max_completion_tokens`: then
  that many words (one token each) and finish_reason "length".
- `"no_stream_usage"`: streams carry no usage chunk, even when `include_usage` asks for one.
- `"cut_stream"`: a streamed reply stops halfway through its text (its tool calls left out)
  and the body ends cleanly: no finish reason, no usage chunk, no `data: [DONE]` (a server or
  proxy that lost the generation mid-reply). The script's reply is consumed.
- `"streamed_tools_refused"`: a streamed request that offers tools gets the broken stream above
  (llama-cpp-python 0.3.36 with `--chat_format chatml-function-calling` raises "Automatic
  streaming tool choice is not supported" once the stream has opened: seen by hand with
  SmolLM2); the same request unstreamed is answered.
- `"stale_keepalive"`: the first request on a reused keep-alive connection is read and then the
  connection is closed with no response (a server that dropped the idle connection as the
  request arrived).

`LLAMA_CPP_QUIRKS` holds the ones every request meets on that server (not the faults).

Use `OpenAIServer` / `AnthropicServer` as context managers, or the `openai_server` /
`anthropic_server` fixtures (import `openai_server_fixture` / `anthropic_server_fixture` into
a test module or conftest).
"""

from __future__ import annotations

import json
import re
import select
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self
from urllib.parse import urlsplit

import pytest

__all__ = [
    "LLAMA_CPP_QUIRKS",
    "NULL_CONTENT_ERROR",
    "QUIRKS",
    "AnthropicServer",
    "LoopbackModelServer",
    "OpenAIServer",
    "Policy",
    "RecordedRequest",
    "Reply",
    "ReplyToolCall",
    "anthropic_server_fixture",
    "default_policy",
    "last_tool_result",
    "last_user_text",
    "offered_tools",
    "openai_server_fixture",
    "react_policy",
]

_JOIN_TIMEOUT_S = 5.0
_IDLE_TIMEOUT_S = 30.0
"""An idle keep-alive connection is dropped after this long (servers live for one test)."""
_CONNECTION_ERRORS = (OSError,)
"""What a hung-up or reset connection raises (ConnectionError and TimeoutError are OSErrors)."""


QUIRKS = frozenset(
    {
        "tools_need_tool_choice",
        "null_content_500",
        "broken_stream",
        "endless_reply",
        "no_stream_usage",
        "cut_stream",
        "streamed_tools_refused",
        "stale_keepalive",
    }
)
"""Every quirk `OpenAIServer` can play (see the module docstring)."""
LLAMA_CPP_QUIRKS = frozenset(
    {"tools_need_tool_choice", "null_content_500", "no_stream_usage", "streamed_tools_refused"}
)
"""What every request meets on llama.cpp's server; the faults (broken streams, endless replies,
dropped keep-alive connections) are switched on by the tests that inject them."""
NULL_CONTENT_ERROR = (
    "Internal Server Error: an exception was raised while applying the model's chat template "
    "(chatml, from the GGUF metadata) to the request's messages before generation could start; "
    "no tokens were evaluated and the slot was released. Template renderer: jinja2 sandboxed "
    "environment, trim_blocks, lstrip_blocks. Request: chat completion with tools. "
    'TypeError: can only concatenate str (not "NoneType") to str'
)
"""The server's 500 text for `"content": null`: the useful part comes after 300 characters."""
_ENDLESS_WORD_DELAY_S = 0.01


# --- replies --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplyToolCall:
    """A tool call in a scripted reply; `id` defaults to a fresh provider-style id."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """One scripted model reply, or an error in the provider's shape when `status` >= 400.

    Args:
        text: The reply's text (streamed word by word).
        tool_calls: Tool calls, after the text (arguments streamed in pieces).
        delay_s: Seconds before a non-streamed reply, and between streamed chunks (a slow
            model); the wait ends as soon as the client leaves.
        prompt_tokens: Reported input tokens.
        completion_tokens: Reported output tokens.
        cached_tokens: Reported prompt tokens read from a cache (sent only when given).
        reasoning_tokens: Reported reasoning tokens (OpenAI's; sent only when given).
        status: HTTP status; >= 400 sends an error body instead of a reply.
        error: The error message for an error status.
        headers: Extra response headers (e.g. `retry-after`).
    """

    text: str = ""
    tool_calls: Sequence[ReplyToolCall] = ()
    delay_s: float = 0.0
    prompt_tokens: int = 11
    completion_tokens: int = 7
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    status: int = 200
    error: str = "scripted error"
    headers: Mapping[str, str] = field(default_factory=dict)


Policy = Callable[[dict[str, Any]], "Reply | str"]
"""Answers one request (its JSON body) with a reply; a str is `Reply(text=...)`."""


@dataclass
class RecordedRequest:
    """One request a server received, and what became of its response."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names are lower-cased."""
    json: Any
    connection: int
    """Which accepted TCP connection carried it (1-based, in accept order)."""
    finished: bool = False
    """The whole response was written."""
    client_went_away: bool = False
    """The client closed the connection before the response ended (a cancelled call)."""
    reply: Reply | None = None
    """What the script or policy answered (None for auth failures, unknown paths, models)."""
    dropped: bool = False
    """A quirk closed the connection without answering it (`stale_keepalive`)."""


# --- reading a conversation in either wire format -------------------------------------------


def offered_tools(body: Mapping[str, Any]) -> list[str]:
    """Names of the tools a request offers (OpenAI or Anthropic shape)."""
    names = []
    for tool in body.get("tools") or ():
        function = tool.get("function")
        names.append(function["name"] if isinstance(function, dict) else tool.get("name", ""))
    return names


def last_tool_result(body: Mapping[str, Any]) -> str | None:
    """The content of the tool result that ends the conversation, if it ends with one."""
    messages = body.get("messages") or []
    if not messages:
        return None
    last = messages[-1]
    if last.get("role") == "tool":  # OpenAI
        return _text_of(last.get("content"))
    content = last.get("content")
    if last.get("role") == "user" and isinstance(content, list):  # Anthropic
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            return _text_of(results[-1].get("content"))
    return None


def last_user_text(body: Mapping[str, Any]) -> str:
    """The text of the conversation's last user message ("" if there is none)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block.get("text", "") if block.get("type") == "text" else _text_of(block.get("content"))
            for block in content
            if isinstance(block, dict)
        )
    return str(content)


def default_policy(body: dict[str, Any]) -> Reply:
    """Drive a function-calling agent: call `add` (or the first tool), then quote its result."""
    result = last_tool_result(body)
    if result is not None:
        return Reply(text=f"The answer is {result}.")
    tools = offered_tools(body)
    if tools:
        name = "add" if "add" in tools else tools[0]
        return Reply(tool_calls=[ReplyToolCall(name, {"a": 1, "b": 2})])
    return Reply(text="Hello from the loopback model.")


def react_policy(body: dict[str, Any]) -> Reply:
    """Drive a ReAct agent in its text protocol: act with `add`, then answer the observation."""
    text = last_user_text(body)
    if text.startswith("Observation:"):
        observation = text.removeprefix("Observation:").strip()
        return Reply(text=f"Thought: I have the sum.\nAnswer: {observation}")
    return Reply(text='Thought: I should add.\nAction: add\nAction Input: {"a": 1, "b": 2}')


# --- the server -----------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    """One TCP connection; `handle` serves its requests until the client closes it."""

    protocol_version = "HTTP/1.1"
    timeout = _IDLE_TIMEOUT_S
    server: _HTTPServer

    served = 0
    """Requests answered on this connection (a later one arrives on a reused connection)."""

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; Nagle would hold the body back until the
        # client's delayed ACK (40 ms a response).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connection_number = self.server.owner._opened(self)

    def finish(self) -> None:
        try:
            super().finish()
        except _CONNECTION_ERRORS:
            pass
        finally:
            self.server.owner._closed(self)

    def do_GET(self) -> None:
        self.server.owner._serve(self)

    def do_POST(self) -> None:
        self.server.owner._serve(self)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # Quiet: a test's output shows only what the test says.

    # ------------------------------------------------------------------ writing helpers

    def read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # Trailers.
            return b"".join(parts)
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def send_json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def start_chunked(self, headers: Mapping[str, str]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")

    def end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")

    def client_left_within(self, seconds: float) -> bool:
        """Wait up to `seconds`; True as soon as the client closes the connection.

        No request is pipelined behind a streamed one, so a readable socket means EOF.
        """
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.connection], [], [], left)
            if not readable:
                return False
            try:
                if self.connection.recv(1, socket.MSG_PEEK) == b"":
                    return True
            except _CONNECTION_ERRORS:
                return True
            time.sleep(min(left, 0.01))  # Unexpected bytes: just wait out the delay.
        return False


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: LoopbackModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, _CONNECTION_ERRORS):
            return  # A client that hangs up is normal (a cancelled stream, a closed pool).
        if error is not None:
            self.owner._record_error(error)


class _ClientWentAway(Exception):
    """The client closed the connection while a response was being written."""


class LoopbackModelServer:
    """A model server on 127.0.0.1 in a background thread; a provider's subclass speaks its API.

    Args:
        replies: Replies served in order (a str is `Reply(text=...)`).
        policy: Answers each request once `replies` are spent (default: `default_policy`
            when no replies are given either). Called on the server's threads, possibly
            several at once.
        api_key: The key clients must send; any key (or none) is accepted when None.
        model: The model name `GET /v1/models` lists (replies echo the requested one).
        quirks: Quirks of real servers to play (see the module docstring).
    """

    provider: ClassVar[str]
    known_quirks: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        replies: Iterable[Reply | str] = (),
        *,
        policy: Policy | None = None,
        api_key: str | None = None,
        model: str = "loopback-model",
        quirks: Iterable[str] = (),
    ) -> None:
        unknown = set(quirks) - self.known_quirks
        if unknown:
            raise ValueError(
                f"{type(self).__name__} has no quirk {sorted(unknown)}; "
                f"known: {sorted(self.known_quirks) or 'none'}"
            )
        self.quirks: set[str] = set(quirks)
        """The quirks in play; add or discard names mid-test to switch them."""
        self.quirk_hits: Counter[str] = Counter()
        """How often each quirk fired."""
        self.expected_api_key = api_key
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []
        self.connections_accepted = 0
        self.disconnects = 0
        self._changed = threading.Condition()
        self._open: dict[int, _Handler] = {}
        self._threads: list[threading.Thread] = []
        self._ids = 0
        self._httpd: _HTTPServer | None = None
        self._serving: threading.Thread | None = None
        self.script(*replies, policy=policy)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self.url if self._httpd else None!r})"

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>`, without a path."""
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not started; call start() first")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Self:
        """Listen on a free port and serve in a background thread."""
        if self._httpd is not None:
            return self
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._serving = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{self.provider}-loopback-server",
            daemon=True,
        )
        self._serving.start()
        return self

    def stop(self) -> None:
        """Stop accepting, close every open connection and join the server's threads."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        with self._changed:
            handlers = list(self._open.values())
        for handler in handlers:
            try:
                handler.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # Already closed by the client.
        httpd.server_close()
        if self._serving is not None:
            self._serving.join(_JOIN_TIMEOUT_S)
        for thread in list(self._threads):
            thread.join(_JOIN_TIMEOUT_S)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        self.stop()
        if exc_type is None:
            self.check()  # A policy that raised fails the test even if the client coped.

    # ------------------------------------------------------------------ scripting

    def script(self, *replies: Reply | str, policy: Policy | None = None) -> None:
        """Serve `replies` in order, then ask `policy` (default policy if neither is given)."""
        with self._changed:
            self._replies = [_as_reply(r) for r in replies]
            self._scripted = len(self._replies)
            if policy is None and not replies:
                policy = default_policy
            self._policy = policy

    @property
    def remaining(self) -> int:
        """Scripted replies not served yet."""
        with self._changed:
            return len(self._replies)

    def check(self) -> None:
        """Raise if anything failed inside the server (a policy raised, the script ran out)."""
        if self.errors:
            raise AssertionError(
                f"{type(self).__name__} failed while serving: {self.errors[0]!r}"
                + (f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else "")
            ) from self.errors[0]

    # ------------------------------------------------------------------ observing

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """The chat requests (not `GET /v1/models` and the like)."""
        return [r for r in list(self.requests) if r.method == "POST"]

    def wait_until(self, condition: Callable[[], bool], timeout: float = 5.0) -> bool:
        """Wait until `condition()` holds (re-checked whenever the server's state changes)."""
        with self._changed:
            return self._changed.wait_for(condition, timeout)

    # ------------------------------------------------------------------ the handler's side

    def _opened(self, handler: _Handler) -> int:
        with self._changed:
            self.connections_accepted += 1
            number = self.connections_accepted
            self._open[number] = handler
            self._threads.append(threading.current_thread())
            self._changed.notify_all()
        return number

    def _closed(self, handler: _Handler) -> None:
        with self._changed:
            self._open.pop(handler.connection_number, None)
            self._changed.notify_all()

    def _record_error(self, error: BaseException) -> None:
        with self._changed:
            self.errors.append(error)
            self._changed.notify_all()

    def _next_id(self, prefix: str) -> str:
        with self._changed:
            self._ids += 1
            return f"{prefix}{self._ids:04d}"

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._changed:
            if self._replies:
                return self._replies.pop(0)
            policy = self._policy
        if policy is None:
            raise AssertionError(
                f"{type(self).__name__} has no reply left: all {self._scripted} scripted replies "
                "were used and no policy was given; script more, or check why the agent asked "
                "the model again"
            )
        return _as_reply(policy(body))

    def _serve(self, handler: _Handler) -> None:
        path = urlsplit(handler.path).path
        raw = handler.read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        record = RecordedRequest(
            method=handler.command,
            path=path,
            headers={k.lower(): v for k, v in handler.headers.items()},
            json=body,
            connection=handler.connection_number,
        )
        with self._changed:
            self.requests.append(record)
            self._changed.notify_all()
        try:
            self._respond(handler, record)
            record.finished = True
        except (_ClientWentAway, *_CONNECTION_ERRORS):
            record.client_went_away = True
            handler.close_connection = True
            with self._changed:
                self.disconnects += 1
        finally:
            with self._changed:
                self._changed.notify_all()

    def _hit(self, quirk: str) -> bool:
        """Whether `quirk` is in play; counts it as fired when it is."""
        with self._changed:
            if quirk not in self.quirks:
                return False
            self.quirk_hits[quirk] += 1
            self._changed.notify_all()
            return True

    def _drop(self, handler: _Handler) -> None:
        """Close the connection at once, whatever was sent on it."""
        handler.wfile.flush()
        handler.close_connection = True
        try:
            handler.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # The client left first.

    def _respond(self, handler: _Handler, record: RecordedRequest) -> None:
        if handler.served and self._hit("stale_keepalive"):
            record.dropped = True
            self._drop(handler)
            return
        handler.served += 1
        if not self._authorized(record.headers):
            handler.send_json(401, self._auth_error())
            return
        route = self._route(record.method, record.path)
        if route is None:
            message = f"no route for {record.method} {record.path}"
            handler.send_json(404, self._error_body(404, message))
            return
        if route == "models":
            handler.send_json(200, self._models())
            return
        body = record.json if isinstance(record.json, dict) else {}
        if self._quirky_response(handler, body):
            return
        try:
            reply = self._next_reply(body)
        except Exception as exc:
            self._record_error(exc)
            handler.send_json(500, self._error_body(500, f"loopback server: {exc}"))
            return
        record.reply = reply
        if reply.status >= 400:
            handler.send_json(
                reply.status, self._error_body(reply.status, reply.error), reply.headers
            )
            return
        model = str(body.get("model") or self.model)
        if not body.get("stream"):
            if reply.delay_s and handler.client_left_within(reply.delay_s):
                raise _ClientWentAway
            handler.send_json(reply.status, self._message(reply, body, model), reply.headers)
            return
        handler.start_chunked(reply.headers)
        for position, event in enumerate(self._events(reply, body, model)):
            if position and reply.delay_s and handler.client_left_within(reply.delay_s):
                raise _ClientWentAway
            handler.write_chunk(event)
        handler.end_chunked()

    # ------------------------------------------------------------------ per provider

    def _quirky_response(self, handler: _Handler, body: dict[str, Any]) -> bool:
        """Answer a chat request the way a quirk does; True when it was answered."""
        return False

    def _authorized(self, headers: Mapping[str, str]) -> bool:
        raise NotImplementedError

    def _auth_error(self) -> dict[str, Any]:
        raise NotImplementedError

    def _route(self, method: str, path: str) -> str | None:
        raise NotImplementedError

    def _models(self) -> dict[str, Any]:
        return {"object": "list", "data": []}

    def _error_body(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError

    def _message(self, reply: Reply, body: dict[str, Any], model: str) -> dict[str, Any]:
        raise NotImplementedError

    def _events(self, reply: Reply, body: dict[str, Any], model: str) -> Iterator[bytes]:
        raise NotImplementedError


def _as_reply(reply: Reply | str) -> Reply:
    return Reply(text=reply) if isinstance(reply, str) else reply


def _words(text: str) -> list[str]:
    """`text` in word-sized pieces that join back to it."""
    return re.findall(r"\s*\S+\s*|\s+", text) or ([text] if text else [])


def _pieces(text: str, count: int = 3) -> list[str]:
    """`text` cut into up to `count` pieces (how providers stream tool arguments)."""
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# --- OpenAI ---------------------------------------------------------------------------------

_OPENAI_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


class OpenAIServer(LoopbackModelServer):
    """OpenAI's chat completions API: `POST /v1/chat/completions`, `GET /v1/models`.

    Point `OpenAILLM(base_url=server.url + "/v1", api_key=...)` at it. `quirks` plays the
    quirks of real local servers (see the module docstring).
    """

    provider = "openai"
    known_quirks = QUIRKS

    # ------------------------------------------------------------------ quirks

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        if not (offered_tools(body) and "tool_choice" not in body):
            return super()._next_reply(body)
        if not self._hit("tools_need_tool_choice"):
            return super()._next_reply(body)
        reply = super()._next_reply({k: v for k, v in body.items() if k != "tools"})
        if reply.status >= 400:
            return reply
        prose = reply.text or f"I answer in prose: {last_user_text(body) or 'hello'}"
        return replace(reply, text=prose, tool_calls=())

    def _quirky_response(self, handler: _Handler, body: dict[str, Any]) -> bool:
        messages = body.get("messages") or []
        nulls = any(
            isinstance(m, dict) and m.get("role") == "assistant" and m.get("content", "") is None
            for m in messages
        )
        if nulls and self._hit("null_content_500"):
            error = {"code": 500, "message": NULL_CONTENT_ERROR, "type": "server_error"}
            handler.send_json(500, {"error": error})
            return True
        streamed_tools = bool(body.get("stream") and body.get("tools"))
        if (streamed_tools and self._hit("streamed_tools_refused")) or (
            body.get("stream") and self._hit("broken_stream")
        ):
            handler.start_chunked({})
            handler.end_chunked()  # A well-formed, empty body: no error, and no reply.
            self._drop(handler)
            return True
        if self._hit("endless_reply"):
            self._endless(handler, body)
            return True
        return False

    def _endless(self, handler: _Handler, body: dict[str, Any]) -> None:
        """A reply that goes on until the client leaves, or until the request's cap."""
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        model = str(body.get("model") or self.model)
        if not body.get("stream"):
            if cap is None:
                while not handler.client_left_within(0.05):
                    if self._httpd is None:
                        break  # Stopping: end the wait.
                raise _ClientWentAway
            reply = Reply(text="word " * int(cap), completion_tokens=int(cap))
            message = self._message(reply, body, model)
            message["choices"][0]["finish_reason"] = "length"
            handler.send_json(200, message)
            return
        completion_id = self._next_id("chatcmpl-")
        handler.start_chunked({})
        handler.write_chunk(self._chunk(completion_id, model, body, {"role": "assistant"}))
        written = 0
        while cap is None or written < int(cap):
            if handler.client_left_within(_ENDLESS_WORD_DELAY_S) or self._httpd is None:
                raise _ClientWentAway
            handler.write_chunk(self._chunk(completion_id, model, body, {"content": "word "}))
            written += 1
        handler.write_chunk(self._chunk(completion_id, model, body, {}, "length"))
        usage = Reply(completion_tokens=written)
        for event in self._usage_events(completion_id, model, body, usage):
            handler.write_chunk(event)
        handler.end_chunked()

    def _authorized(self, headers: Mapping[str, str]) -> bool:
        if self.expected_api_key is None:
            return True
        return headers.get("authorization") == f"Bearer {self.expected_api_key}"

    def _auth_error(self) -> dict[str, Any]:
        return self._error_body(401, "Incorrect API key provided.")

    def _route(self, method: str, path: str) -> str | None:
        if method == "POST" and path == "/v1/chat/completions":
            return "chat"
        if method == "GET" and path == "/v1/models":
            return "models"
        return None

    def _models(self) -> dict[str, Any]:
        model = {"id": self.model, "object": "model", "created": 0, "owned_by": "loopback"}
        return {"object": "list", "data": [model]}

    def _error_body(self, status: int, message: str) -> dict[str, Any]:
        kind, code = _OPENAI_ERROR_TYPES.get(status, ("server_error", None))
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    def _calls(self, reply: Reply) -> list[tuple[str, ReplyToolCall]]:
        return [(call.id or self._next_id("call_"), call) for call in reply.tool_calls]

    @staticmethod
    def _usage(reply: Reply) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }
        if reply.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
        if reply.reasoning_tokens is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
        return usage

    def _message(self, reply: Reply, body: dict[str, Any], model: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        calls = self._calls(reply)
        if calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(dict(call.args))},
                }
                for call_id, call in calls
            ]
        return {
            "id": self._next_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": self._usage(reply),
        }

    def _includes_usage(self, body: dict[str, Any]) -> bool:
        """Whether a stream ends with a usage chunk (asked for, and not quirked away)."""
        if not (body.get("stream_options") or {}).get("include_usage"):
            return False
        return not self._hit("no_stream_usage")

    def _chunk(
        self,
        completion_id: str,
        model: str,
        body: dict[str, Any],
        delta: dict[str, Any],
        finish: str | None = None,
    ) -> bytes:
        data: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if (body.get("stream_options") or {}).get("include_usage"):
            data["usage"] = None
        return _sse(data)

    def _usage_events(
        self, completion_id: str, model: str, body: dict[str, Any], reply: Reply
    ) -> Iterator[bytes]:
        if self._includes_usage(body):
            usage = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "usage": self._usage(reply),
            }
            yield _sse(usage)
        yield b"data: [DONE]\n\n"

    def _events(self, reply: Reply, body: dict[str, Any], model: str) -> Iterator[bytes]:
        completion_id = self._next_id("chatcmpl-")

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return self._chunk(completion_id, model, body, delta, finish)

        yield chunk({"role": "assistant", "content": ""})
        words = list(_words(reply.text))
        if self._hit("cut_stream"):  # Half the text, then a clean end with nothing else.
            yield from (chunk({"content": word}) for word in words[: max(1, len(words) // 2)])
            return
        for word in words:
            yield chunk({"content": word})
        calls = self._calls(reply)
        for index, (call_id, call) in enumerate(calls):
            start = {"name": call.name, "arguments": ""}
            yield chunk(
                {
                    "tool_calls": [
                        {"index": index, "id": call_id, "type": "function", "function": start}
                    ]
                }
            )
            for piece in _pieces(json.dumps(dict(call.args))):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, "tool_calls" if calls else "stop")
        yield from self._usage_events(completion_id, model, body, reply)


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


# --- Anthropic ------------------------------------------------------------------------------

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


class AnthropicServer(LoopbackModelServer):
    """Anthropic's Messages API: `POST /v1/messages`, streamed or not.

    Point `AnthropicLLM(base_url=server.url, api_key=...)` at it.
    """

    provider = "anthropic"

    def _authorized(self, headers: Mapping[str, str]) -> bool:
        # The API takes `x-api-key`; the SDK 2.x sends an api_key as a bearer token instead.
        key = self.expected_api_key
        return key is None or key in (
            headers.get("x-api-key"),
            headers.get("authorization", "").removeprefix("Bearer "),
        )

    def _auth_error(self) -> dict[str, Any]:
        return self._error_body(401, "invalid x-api-key")

    def _route(self, method: str, path: str) -> str | None:
        if method == "POST" and path == "/v1/messages":
            return "messages"
        return None

    def _error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def _blocks(self, reply: Reply) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if reply.text:
            blocks.append({"type": "text", "text": reply.text})
        blocks.extend(
            {
                "type": "tool_use",
                "id": call.id or self._next_id("toolu_"),
                "name": call.name,
                "input": dict(call.args),
            }
            for call in reply.tool_calls
        )
        return blocks

    def _message(self, reply: Reply, body: dict[str, Any], model: str) -> dict[str, Any]:
        return {
            "id": self._next_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": self._blocks(reply),
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": reply.prompt_tokens,
                "output_tokens": reply.completion_tokens,
                "cache_read_input_tokens": reply.cached_tokens,
            },
        }

    def _events(self, reply: Reply, body: dict[str, Any], model: str) -> Iterator[bytes]:
        start = self._message(reply, body, model)
        blocks = start["content"]
        start.update(content=[], stop_reason=None)
        start["usage"] = {
            "input_tokens": reply.prompt_tokens,
            "output_tokens": 1,
            "cache_read_input_tokens": reply.cached_tokens,
        }
        yield _sse({"type": "message_start", "message": start}, "message_start")
        for index, block in enumerate(blocks):
            yield from self._block_events(index, block)
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use" if reply.tool_calls else "end_turn"},
            "usage": {"output_tokens": reply.completion_tokens},
        }
        delta["delta"]["stop_sequence"] = None
        yield _sse(delta, "message_delta")
        yield _sse({"type": "message_stop"}, "message_stop")

    @staticmethod
    def _block_events(index: int, block: dict[str, Any]) -> Iterator[bytes]:
        def delta(payload: dict[str, Any]) -> bytes:
            event = {"type": "content_block_delta", "index": index, "delta": payload}
            return _sse(event, "content_block_delta")

        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            yield _sse(_block_start(index, opening), "content_block_start")
            for word in _words(block["text"]):
                yield delta({"type": "text_delta", "text": word})
        else:
            opening = {**block, "input": {}}
            yield _sse(_block_start(index, opening), "content_block_start")
            for piece in _pieces(json.dumps(block["input"])):
                yield delta({"type": "input_json_delta", "partial_json": piece})
        yield _sse({"type": "content_block_stop", "index": index}, "content_block_stop")


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


# --- fixtures -------------------------------------------------------------------------------


@pytest.fixture(name="openai_server")
def openai_server_fixture() -> Iterator[OpenAIServer]:
    """A started `OpenAIServer` with the default policy; `server.script(...)` changes it."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture(name="anthropic_server")
def anthropic_server_fixture() -> Iterator[AnthropicServer]:
    """A started `AnthropicServer` with the default policy; `server.script(...)` changes it."""
    with AnthropicServer() as server:
        yield server
