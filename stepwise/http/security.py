"""The gate of both HTTP APIs: a bearer token when one is set, and bounded request bodies.

`stepwise serve` and the services' control plane put the same middleware in front of their
routes. Pure ASGI, so a refused request is answered before any route reads its body. The
token is compared in constant time and never echoed, logged or put in an error.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stepwise.http.errors import error_body
from stepwise.http.settings import TOKEN_ENV

__all__ = ["OPEN_PATHS", "GateMiddleware", "RouteLimit"]

OPEN_PATHS = frozenset({"/health"})
"""Routes answered without a token (a load balancer's health check)."""


@dataclass(frozen=True)
class RouteLimit:
    """A body limit of their own for the routes whose path matches `path` (an upload's)."""

    path: re.Pattern[str]
    max_bytes: int
    hint: str
    """What a 413 from these routes advises."""


class _BodyTooLarge(StarletteHTTPException):
    """Raised from `receive`: an HTTPException, so a route reading the body passes it on."""

    def __init__(self, limit: int) -> None:
        message = f"the request body is over the limit; this server reads at most {limit:,} bytes"
        super().__init__(413, message)


class _CountedReceive:
    """`receive`, raising `_BodyTooLarge` once the body read so far passes `limit`."""

    def __init__(self, receive: Receive, limit: int) -> None:
        self._receive, self._limit, self._total = receive, limit, 0

    async def __call__(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request":
            self._total += len(message.get("body", b""))
            if self._total > self._limit:
                raise _BodyTooLarge(self._limit)
        return message


class _ResponseWatch:
    """`send`, remembering whether the response has begun (then no error can replace it)."""

    def __init__(self, send: Send) -> None:
        self._send, self.started = send, False

    async def __call__(self, message: Message) -> None:
        self.started = self.started or message["type"] == "http.response.start"
        await self._send(message)


class GateMiddleware:
    """Refuse requests without the token (401) and bodies over `max_body_bytes` (413).

    A route in `route_limits` has its limit instead (an upload takes files of its own size).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        max_body_bytes: int,
        route_limits: Sequence[RouteLimit] = (),
    ) -> None:
        self.app = app
        self._token = token.encode() if token else None
        self._max = max_body_bytes
        self._routes = tuple(route_limits)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # noqa: D102
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._token is not None and scope["path"] not in OPEN_PATHS:
            if not self._authorized(scope):
                await _reply(send, 401, "unauthorized", _NO_TOKEN, _HINT)
                return
        declared = _content_length(scope)
        limit, hint = self._limit_of(scope["path"])
        if declared is not None and declared > limit:
            await _reply(send, 413, "body_too_large", _too_large(declared, limit), hint)
            return
        response = _ResponseWatch(send)
        try:
            await self.app(scope, _CountedReceive(receive, limit), response)
        except _BodyTooLarge:
            if not response.started:  # A body with no declared length: refused as it grows.
                await _reply(send, 413, "body_too_large", _too_large(None, limit), hint)

    def _authorized(self, scope: Scope) -> bool:
        assert self._token is not None
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        return bearer_matches(header, self._token)

    def _limit_of(self, path: str) -> tuple[int, str]:
        for route in self._routes:
            if route.path.fullmatch(path):
                return route.max_bytes, route.hint
        return self._max, _SHORTEN


def _too_large(size: int | None, limit: int) -> str:
    what = f"{size:,} bytes" if size is not None else "over the limit"
    return f"the request body is {what}; this route reads at most {limit:,} bytes"


def bearer_matches(header: bytes, token: bytes) -> bool:
    """Whether an `Authorization` header carries `token` as its bearer (constant time)."""
    scheme, _, given = header.partition(b" ")
    if scheme.lower() != b"bearer" or not given:
        return False
    return hmac.compare_digest(given.strip(), token)


_NO_TOKEN = "this server requires a token: send the header `Authorization: Bearer <token>`"
_HINT = f"the token is the value of {TOKEN_ENV} on the server"
_SHORTEN = "send less in one request: condense a long message history, split large content"


def _content_length(scope: Scope) -> int | None:
    value = dict(scope.get("headers") or []).get(b"content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


async def _reply(send: Send, status: int, code: str, message: str, hint: str) -> None:
    body: Any = json.dumps(error_body(code, message, hint)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
