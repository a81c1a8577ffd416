"""Refuse a JSON body holding a lone surrogate before any route reads it (422 `invalid_text`).

A lone surrogate (U+D800 to U+DFFF as a JSON escape, or as UTF-8 bytes, which `json.loads`
lets through) is no character: no store, file or wire can encode it. The runtime checks the
inputs it stores, but not every field a route echoes: `additional_input` was stored with the
task, and the response that repeated it failed to encode (a 500 after the task existed, so a
retrying client made a duplicate). Checked here, at the edge, every route of every API is
covered before any write.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_core.errors import InvalidTextError
from stepwise.http.errors import error_body, runtime_error

__all__ = ["InvalidTextGuard", "lone_surrogate"]

# A surrogate's JSON escape, or its UTF-8 bytes (ED A0..BF xx): a cheap test on the raw body,
# so the body is parsed again only when it may hold one (a valid pair matches too).
_MAYBE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|\xed[\xa0-\xbf]")
_LONE = re.compile("[\ud800-\udfff]")
_MAX_PATH = 200  # A field's path as the error names it: keys are the client's, of any length.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_FORMS = (b"multipart/form-data", b"application/x-www-form-urlencoded")


def lone_surrogate(body: bytes) -> tuple[str, int] | None:
    """Where a JSON body holds a lone surrogate: (field path, character index), or None.

    A body that is not JSON is left to the route, which says so in its own words.
    """
    if not _MAYBE.search(body):
        return None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return _find(data)


def _find(data: Any) -> tuple[str, int] | None:
    """The first lone surrogate in a key or string of `data` (iterative: nesting is unbounded)."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            found = _LONE.search(value)
            if found is not None:
                return (path or "body")[:_MAX_PATH], found.start()
        elif isinstance(value, dict):
            named = [(f"{path}.{key}" if path else key, key, item) for key, item in value.items()]
            for inner, key, _ in named:
                lone = _LONE.search(key)
                if lone is not None:  # A key is text too; named by its escape, not itself.
                    return _escaped(inner), lone.start()
            stack.extend((inner, item) for inner, _, item in reversed(named))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in reversed(list(enumerate(value))))
    return None


def _escaped(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")[:_MAX_PATH]


class InvalidTextGuard:
    """Read a JSON request's body, refuse it if it holds a lone surrogate, else pass it on.

    Placed inside the token gate, so the body it reads is bounded and authorised already.
    Forms (an artifact upload) pass untouched: their file is bytes, and they stream.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS or _is_form(scope):
            await self.app(scope, receive, send)
            return
        body, last = await _read_body(receive)
        found = lone_surrogate(body)
        if found is not None:
            await _refuse(send, *found)
            return
        await self.app(scope, _Replay(body, last, receive), send)


class _Replay:
    """`receive` that gives the body read already, then the client's own messages."""

    def __init__(self, body: bytes, last: Message, receive: Receive) -> None:
        self._first: Message | None = {**last, "body": body, "more_body": False}
        self._receive = receive

    async def __call__(self) -> Message:
        first, self._first = self._first, None
        return first if first is not None else await self._receive()


async def _read_body(receive: Receive) -> tuple[bytes, Message]:
    """The whole body and its last message (a disconnect ends it early)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), {"type": "http.request"}
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), message


def _is_form(scope: Scope) -> bool:
    kind = dict(scope.get("headers") or []).get(b"content-type", b"").lower()
    return kind.startswith(_FORMS)


async def _refuse(send: Send, path: str, position: int) -> None:
    """422 `invalid_text`, as the runtime's own check answers, naming the field."""
    error = runtime_error(
        InvalidTextError(
            f"the request's {path} holds a lone surrogate (at character {position:,}), which "
            "is no character: it cannot be stored or sent; nothing was written",
            hint="remove it, or send the text as UTF-8 (a JSON escape like \\ud800 must be one "
            "of a surrogate pair)",
            params={"what": path, "position": position},
        )
    )
    body = json.dumps(error_body(error.code, error.message, error.hint, **error.extra)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
