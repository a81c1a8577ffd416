"""The app's token, the way Jupyter asks for its own: a URL with the token logs a browser in.

A bearer header suits programs, but a person opens the app by typing a URL. So, when
`STEPWISE_API_TOKEN` is set, the first page is opened as `http://host:8501/?token=<token>`:
the server answers with a redirect to the same page without the token (it stays out of the
browser's history and the address bar) and a login cookie. Every other request, the app's
WebSocket included, needs that cookie or an `Authorization: Bearer <token>` header.

The cookie holds an HMAC of the token, never the token itself; it is HttpOnly and SameSite=Lax,
and its name carries the port, because browsers share cookies between the ports of one host
(two apps on one machine would otherwise log each other out). Pure ASGI, like the other gates.
"""

from __future__ import annotations

import hashlib
import hmac
import html
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Receive, Scope, Send

from stepwise.http.security import bearer_matches
from stepwise.http.settings import TOKEN_ENV

__all__ = ["LOGIN_PARAMETER", "TokenLogin", "login_cookie_name"]

LOGIN_PARAMETER = "token"
"""The query parameter of the URL that logs a browser in (as Jupyter's `?token=`)."""

_OPEN_PATHS = frozenset({"/_stcore/health", "/healthz"})
"""Streamlit's health checks: a load balancer or a supervisor asks them without a login."""


def login_cookie_name(port: int | None) -> str:
    """The login cookie's name for the app on `port` (browsers share cookies across ports)."""
    return f"stepwise-login-{port or 'default'}"


class TokenLogin:
    """Refuse every request without the token (a login cookie, a bearer, or `?token=`).

    Args:
        app: The app behind the gate.
        token: The token; None lets every request through (a loopback app with no token).
    """

    def __init__(self, app: ASGIApp, *, token: str | None) -> None:
        self.app = app
        self._token = token.encode() if token else None
        self._proof = _proof(self._token) if self._token else ""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # noqa: D102
        if self._token is None or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"] in _OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self._logged_in(scope):
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "unauthorized"})
        elif (given := _query_token(scope)) is not None and hmac.compare_digest(
            given.encode(), self._token
        ):
            await self._log_in(scope, send)
        else:
            await _ask_for_token(send, wrong=given is not None)

    def _logged_in(self, scope: Scope) -> bool:
        assert self._token is not None
        headers = dict(scope.get("headers") or [])
        if bearer_matches(headers.get(b"authorization", b""), self._token):
            return True
        cookie = _cookie(headers.get(b"cookie", b""), login_cookie_name(_port(scope)))
        return cookie is not None and hmac.compare_digest(cookie, self._proof)

    async def _log_in(self, scope: Scope, send: Send) -> None:
        """Redirect to the same page without the token, setting the login cookie."""
        query = [(k, v) for k, v in _query(scope) if k != LOGIN_PARAMETER]
        location = scope.get("root_path", "") + scope["path"]
        if query:
            location += "?" + urlencode(query)
        secure = "; Secure" if scope.get("scheme") == "https" else ""
        cookie = (
            f"{login_cookie_name(_port(scope))}={self._proof}; Path=/; HttpOnly;"
            f" SameSite=Lax{secure}"
        )
        headers = [
            (b"location", location.encode("latin-1", "replace")),
            (b"set-cookie", cookie.encode()),
            (b"cache-control", b"no-store"),
            (b"content-length", b"0"),
        ]
        await send({"type": "http.response.start", "status": 302, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


def _proof(token: bytes) -> str:
    """What the login cookie holds: an HMAC of the token, so the cookie never reveals it."""
    return hmac.new(token, b"stepwise app login", hashlib.sha256).hexdigest()


def _query(scope: Scope) -> list[tuple[str, str]]:
    return parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)


def _query_token(scope: Scope) -> str | None:
    return next((v for k, v in _query(scope) if k == LOGIN_PARAMETER), None)


def _port(scope: Scope) -> int | None:
    server = scope.get("server")
    return server[1] if server and len(server) > 1 else None


def _cookie(header: bytes, name: str) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header.decode("latin-1"))
    except CookieError:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Stepwise: token needed</title>
</head><body style="font-family: sans-serif; max-width: 40em; margin: 4em auto">
<h1>This Stepwise app needs its token</h1><p>{reason}</p>
<p>Open the app's address with the token added: <code>http://HOST:PORT/?token=&lt;token&gt;</code>.
The token is the value of <code>{env}</code> where the app was started.</p></body></html>"""


async def _ask_for_token(send: Send, *, wrong: bool) -> None:
    reason = (
        "The token in this address is not the app's."
        if wrong
        else "It listens beyond this machine, so every browser logs in once with the token."
    )
    body = _PAGE.format(reason=html.escape(reason, quote=False), env=TOKEN_ENV).encode()
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        (b"www-authenticate", b"Bearer"),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})
