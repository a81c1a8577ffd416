"""The guard in front of the app: a local server that runs code answers only its own pages.

Any web page the person opens can make their browser talk to `localhost:8501`. Streamlit's own
settings do not stop it: its WebSocket takes any page on localhost (another port included)
and, without `server.allowedHosts`, any host name, so a page under a name re-pointed at
127.0.0.1 (DNS rebinding) could drive the app and run the python tool. So the app is served
as a `st.App` with the guard every face shares (`stepwise.http`):

- `BrowserGuard`: only `localhost`, IP addresses and the names in `STEPWISE_ALLOWED_HOSTS`, on
  HTTP and on the WebSocket; a WebSocket or a state-changing request from another origin is
  refused; only the app's own pages may frame it. Uploads keep Streamlit's XSRF token.
- `TokenLogin`: with `STEPWISE_API_TOKEN` set, every browser logs in once with
  `/?token=...`, as with Jupyter. Listening beyond loopback without a token is refused.
"""

from __future__ import annotations

import sys

from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_core.errors import UserError
from stepwise.http.browser_guard import BrowserGuard
from stepwise.http.settings import TOKEN_ENV, allowed_hosts, api_token, check_exposure
from stepwise.http.token_login import TokenLogin

__all__ = ["DefaultPageLink", "app_middleware"]


def app_middleware() -> list[Middleware]:
    """The app's guard, for `st.App(..., middleware=...)`; exits (status 2) on unsafe settings.

    Reads the address Streamlit will listen on, `STEPWISE_API_TOKEN` and
    `STEPWISE_ALLOWED_HOSTS`; `streamlit run` has loaded its settings before it imports the
    script that builds the app.
    """
    address, port = _listening_address()
    token = api_token()
    try:
        check_exposure(address, token)
        names = allowed_hosts()
    except UserError as error:
        print(f"Stepwise: {error}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    if token:
        print(
            f"Stepwise: this app needs its token; open it as http://{address}:{port}/?token=<the"
            f" value of {TOKEN_ENV}>",
            file=sys.stderr,
            flush=True,
        )
    return [
        Middleware(BrowserGuard, allowed_hosts=names, json_bodies_only=False, own_frames_only=True),
        Middleware(TokenLogin, token=token),
        Middleware(DefaultPageLink, path=f"/{_default_page()}"),
    ]


class DefaultPageLink:
    """Send a link to the default page's own path (`/stepper?task=...`) to `/`, query kept.

    Streamlit serves the default page at "/" only: opened by its own path, the page ran but a
    "Page not found" dialog covered it. Links to `/stepper` are in users' notes and bookmarks.
    """

    def __init__(self, app: ASGIApp, *, path: str) -> None:
        self.app = app
        self._path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # noqa: D102
        if scope["type"] != "http" or scope["path"].rstrip("/") != self._path:
            await self.app(scope, receive, send)
            return
        query = scope.get("query_string", b"")
        location = (
            scope.get("root_path", "") + "/" + ("?" + query.decode("latin-1") if query else "")
        )
        headers = [(b"location", location.encode("latin-1")), (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 302, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


def _default_page() -> str:
    from stepwise.app.main import PAGES  # Streamlit is loaded by now: this runs in its server.

    return next(page.name for page in PAGES if page.default)


def _listening_address() -> tuple[str, int]:
    """The address and port Streamlit listens on; no address is every interface, as there."""
    from streamlit import config

    return config.get_option("server.address") or "0.0.0.0", config.get_option("server.port")
