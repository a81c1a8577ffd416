"""Refuse what another web page can make a browser send to either HTTP API.

Any page a person opens can make their browser send "simple" requests to any address, a
loopback server included, without asking the server first: a form post, and a `fetch` with a
form, `text/plain`, multipart or empty body. And a page whose name the attacker re-points at
127.0.0.1 (DNS rebinding) is, to the browser, the server's own origin: it reads the answers
too. A token stops both, as browsers never add one on their own, but a loopback server has
none by default; so this guard stands in front of the token gate on every server:

- `Host` must be a loopback name, an IP address, or a name in `STEPWISE_ALLOWED_HOSTS`:
  rebinding needs a name of the attacker's (403 `host_not_allowed`). `/health` stays open to
  load balancers, which may name the server their own way; the app shows such a caller no more
  than "ok".
- A request that may change state (any method but GET, HEAD, OPTIONS) must not come from
  another page: `Sec-Fetch-Site` other than `same-origin`/`none`, or an `Origin` (else a
  `Referer`) that is neither the request's own host nor an allowed name, is refused (403
  `cross_origin_refused`). Programs send neither header, so their body-less POSTs still work;
  a browser's body-less or form POST from another page does not, nor a page on another port
  of this machine (another origin, the same "site").
- A WebSocket must come from this server's own page: its `Host` as above, and an `Origin`, when
  the client sends one (every browser does), that is the request's own host and port or an
  allowed name. A page on another port of this machine is another origin and is refused (the
  handshake is answered 403): a notebook or a dev server in another tab cannot drive the app.
- Bodies are JSON (`application/json`, `application/*+json`); multipart only on the routes
  given as `multipart_paths` (artifact uploads). Any other declared type is refused (415
  `unsupported_media_type`). A body with no type reaches the route, which never reads it as
  JSON (FastAPI's strict content type) and answers 422. The app, whose uploads carry their own
  XSRF token, turns this check off (`json_bodies_only=False`).

Pure ASGI, like the gate, so a refused request is answered before any route runs.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stepwise.http.errors import error_body
from stepwise.http.security import OPEN_PATHS
from stepwise.http.settings import ALLOWED_HOSTS_ENV

__all__ = ["FOREIGN_HOST", "BrowserGuard"]

FOREIGN_HOST = "stepwise.foreign_host"
"""Scope key set on a request to an open path (`/health`) under a host name not allowed, so
the route answers it as it would an anonymous caller."""

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_BROWSER_OWN = frozenset({"same-origin", "none"})
"""`Sec-Fetch-Site` values of a request this server's own page (or the person) made."""
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_UNREADABLE = frozenset("@/\\?# \t")


class BrowserGuard:
    """Refuse foreign `Host` names, requests from other pages that change state, non-JSON bodies.

    Args:
        app: The app behind the guard.
        allowed_hosts: Names answered besides loopback names and IP addresses (lowercase).
        multipart_paths: Paths (a full match) whose route reads a multipart form.
        json_bodies_only: Refuse bodies of other types than JSON (and multipart on
            `multipart_paths`); the app's own uploads are checked by Streamlit's XSRF token.
        own_frames_only: Tell browsers that only this server's own pages may frame its pages
            (`frame-ancestors 'self'`), so another page cannot show the app under its own
            and trick a person into clicking it.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Iterable[str] = (),
        multipart_paths: re.Pattern[str] | None = None,
        json_bodies_only: bool = True,
        own_frames_only: bool = False,
    ) -> None:
        self.app = app
        self._names = frozenset(allowed_hosts)
        self._multipart = multipart_paths
        self._json_only = json_bodies_only
        self._own_frames = own_frames_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # noqa: D102
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get("host")
        if host is not None and not self._host_allowed(host):
            if scope["path"] not in OPEN_PATHS:
                await _refuse(send, 403, "host_not_allowed", *_foreign_host(host))
                return
            scope = {**scope, FOREIGN_HOST: True}
        changes_state = scope["method"] not in _SAFE_METHODS
        if changes_state and (refusal := self._foreign_page(scope, headers)):
            await _refuse(send, 403, "cross_origin_refused", *refusal)
            return
        media = headers.get("content-type")
        if self._json_only and (changes_state or _has_body(headers)) and media:
            if not self._readable(scope, media):
                await _refuse(send, 415, "unsupported_media_type", *self._wrong_type(scope, media))
                return
        await self.app(scope, receive, _own_frames_only(send) if self._own_frames else send)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a handshake under a foreign name or from another origin's page (403)."""
        headers = _headers(scope)
        host, origin = headers.get("host"), headers.get("origin")
        if host is not None and not self._host_allowed(host):
            await send({"type": "websocket.close", "code": 1008, "reason": "host_not_allowed"})
            return
        if origin is not None and not self._own_origin(scope, origin, host):
            await send({"type": "websocket.close", "code": 1008, "reason": "cross_origin_refused"})
            return
        await self.app(scope, receive, send)

    def _host_allowed(self, value: str) -> bool:
        name, _ = _split(value) or ("", None)
        return bool(name) and (name == "localhost" or _is_ip(name) or name in self._names)

    def _foreign_page(self, scope: Scope, headers: dict[str, str]) -> tuple[str, str] | None:
        """Why the request comes from another page's browser (message, hint); None if not."""
        site = headers.get("sec-fetch-site")
        if site is not None and site.strip().lower() not in _BROWSER_OWN:
            return _cross_site(f"Sec-Fetch-Site: {site}")
        source, value = "Origin", headers.get("origin")
        if value is None:  # A browser that sends no Origin may still send the page it is on.
            source, value = "Referer", headers.get("referer")
        if value is not None and not self._own_origin(scope, value, headers.get("host")):
            return _cross_site(f"{source}: {value}")
        return None

    def _own_origin(self, scope: Scope, url: str, host: str | None) -> bool:
        """Whether `url` (an Origin or a Referer) is a page of this server."""
        try:
            parts = urlsplit(url.strip())
            origin = (parts.hostname or "").rstrip("."), parts.port
        except ValueError:
            return False
        if not parts.scheme or not origin[0]:  # `null`: a sandboxed or file page, or hidden.
            return False
        if origin[0] in self._names:  # A name of the operator's (a proxy may rewrite Host).
            return True
        origin = origin[0], _port(parts.scheme, origin[1])
        own = _split(host or "")
        return own is not None and origin == (own[0], _port(scope.get("scheme", "http"), own[1]))

    def _readable(self, scope: Scope, media: str) -> bool:
        kind = media.partition(";")[0].strip().lower()
        if kind.startswith("application/") and (
            kind == "application/json" or kind.endswith("+json")
        ):
            return True
        return kind == "multipart/form-data" and self._takes_multipart(scope)

    def _takes_multipart(self, scope: Scope) -> bool:
        return self._multipart is not None and self._multipart.fullmatch(scope["path"]) is not None

    def _wrong_type(self, scope: Scope, media: str) -> tuple[str, str]:
        kind = media.partition(";")[0].strip()[:100] or "empty"
        takes = "a JSON or a multipart body" if self._takes_multipart(scope) else "JSON bodies"
        message = f"this route reads {takes} only; this request's body is {kind}"
        return message, "send the body as JSON with the header `Content-Type: application/json`"


_FRAME_HEADERS = [
    (b"content-security-policy", b"frame-ancestors 'self'"),
    (b"x-frame-options", b"SAMEORIGIN"),  # For browsers that predate frame-ancestors.
]


def _own_frames_only(send: Send) -> Send:
    """`send`, adding to each response the headers that keep it out of other pages' frames."""

    async def send_framed(message: Message) -> None:
        if message["type"] == "http.response.start":
            names = {name.lower() for name, _ in message.get("headers", [])}
            extra = [(n, v) for n, v in _FRAME_HEADERS if n not in names]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return send_framed


async def _refuse(send: Send, status: int, code: str, message: str, hint: str) -> None:
    body = json.dumps(error_body(code, message, hint)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lowercase name (the first of repeated ones), as Latin-1 text."""
    found: dict[str, str] = {}
    for name, value in scope.get("headers") or []:
        found.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return found


def _split(value: str) -> tuple[str, int | None] | None:
    """(lowercase name without a final dot, port) of a `Host` value; None if it is not one."""
    value = value.strip()
    if not value or any(char in _UNREADABLE for char in value):
        return None
    try:
        parts = urlsplit(f"//{value}")
        return (parts.hostname or "").rstrip("."), parts.port
    except ValueError:
        return None


def _port(scheme: str, port: int | None) -> int | None:
    """`port`, None when it is `scheme`'s default (browsers leave it out of Host and Origin)."""
    return None if port == _DEFAULT_PORTS.get(scheme.lower()) else port


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _has_body(headers: dict[str, str]) -> bool:
    length = headers.get("content-length", "").strip()
    return "transfer-encoding" in headers or (length not in ("", "0"))


def _foreign_host(host: str) -> tuple[str, str]:
    message = (
        f"this server does not answer to the host name {host[:100]!r}: a web page under a name"
        " pointed at this machine (DNS rebinding) could read and drive it"
    )
    hint = (
        f"reach it as localhost or by IP address, or list the names it is reached by in"
        f" {ALLOWED_HOSTS_ENV} (comma-separated) on the server"
    )
    return message, hint


def _cross_site(evidence: str) -> tuple[str, str]:
    message = (
        f"refused: this request would change state and another web page sent it ({evidence[:200]})"
    )
    hint = (
        "call the API from a program (it sends no Origin) or from this server's own pages"
        f" (/docs); a page under a name of yours needs that name in {ALLOWED_HOSTS_ENV}"
    )
    return message, hint
