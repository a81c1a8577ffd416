"""Which control plane the Services page talks to: the local demo one, or one at a URL.

The choice, the URL and the token box live in `st.session_state` (UI state only). The token
is typed into a password field and kept for the browser session; when the box is empty the
server's `STEPWISE_API_TOKEN` is used. It is never written anywhere nor shown. Clients are
cached per server process (`st.cache_resource`), keyed by the URL and a hash of the token, so
a rerun does not open new connections.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import httpx
import streamlit as st

from stepwise.app.components import runtime
from stepwise.app.components.services_local import (
    DEMO_NOTE,
    LocalControlPlane,
    start_local_control_plane,
)
from stepwise.http.settings import TOKEN_ENV, api_token
from stepwise.services import ControlPlaneError, ServicesClient

__all__ = [
    "LOCAL",
    "TOKEN_ENV",
    "URL",
    "Connection",
    "explain_error",
    "local_control_plane",
    "render_connection",
]

LOCAL = "Local demo (in this app)"
URL = "A control plane at a URL"
DEFAULT_URL = "http://127.0.0.1:8100"
_MODE_KEY = "services.mode"
_URL_KEY = "services.url"
_TOKEN_KEY = "services.token"
_START_HINT = (
    "Start it with `stepwise services up CONFIG` (for example "
    "`stepwise services up examples/services.toml`), or check the URL in the box above."
)


@dataclass(frozen=True)
class Connection:
    """The client for the chosen control plane, and how to name it on the page."""

    client: ServicesClient
    url: str
    local: bool


@st.cache_resource(show_spinner="Starting the local demo services…")
def local_control_plane() -> LocalControlPlane:
    """The local demo control plane (see `services_local`), once per process."""
    return start_local_control_plane(runtime.shared_store())


@st.cache_resource(max_entries=8, show_spinner=False)
def _client(url: str, token_id: str, _token: str | None) -> ServicesClient:
    # `token_id` tells tokens apart for the cache; the token itself is not hashed by Streamlit.
    return ServicesClient(url, token=_token, timeout=5.0)


def _token_id(token: str | None) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:16] if token else ""


def client_for(url: str, token: str | None) -> ServicesClient:
    """A cached client for `url` with `token`."""
    return _client(url, _token_id(token), token)


def _remote() -> Connection | None:
    url_col, token_col = st.columns([3, 2])
    url = url_col.text_input(
        "Control plane URL", value=DEFAULT_URL, key=_URL_KEY,
        help="Where `stepwise services up` printed that the control plane listens.",
    ).strip()  # fmt: skip
    typed = token_col.text_input(
        "Token", type="password", key=_TOKEN_KEY,
        help=f"Kept for this browser session only. Empty: the server's ${TOKEN_ENV}, if set.",
    )  # fmt: skip
    if not url.startswith(("http://", "https://")):
        st.warning("Type the control plane's URL, starting with http:// or https://.")
        return None
    token = typed or api_token()
    return Connection(client_for(url.rstrip("/"), token), url.rstrip("/"), local=False)


def _local() -> Connection | None:
    try:
        local = local_control_plane()
    except Exception as exc:  # It runs the quickstart's code: say what failed, keep the page.
        st.error(f"The local demo services could not start ({type(exc).__name__}: {exc}).")
        return None
    if not local.alive:
        st.error("The local demo services stopped. Restart the app (`make run`) to start them.")
        return None
    st.caption(DEMO_NOTE)
    return Connection(client_for(local.url, local.token), local.url, local=True)


def render_connection() -> Connection | None:
    """The control plane picker; the connection, or None (after saying why) when there is none."""
    mode = st.radio(
        "Control plane", [LOCAL, URL], key=_MODE_KEY, horizontal=True,
        help="The local demo runs scripted services inside this app, with no Redis. "
        "Or point the page at a control plane started with `stepwise services up`.",
    )  # fmt: skip
    return _local() if mode == LOCAL else _remote()


def explain_error(exc: Exception, connection: Connection) -> str:
    """What went wrong talking to the control plane, and what to do (plain text)."""
    if isinstance(exc, httpx.TransportError):
        if connection.local:
            return "The local demo control plane did not answer. Restart the app (`make run`)."
        return f"No control plane answers at {connection.url}. {_START_HINT}"
    if isinstance(exc, ControlPlaneError):
        if exc.status == 401:
            return (
                f"The control plane at {connection.url} wants a token: type it in the Token box "
                f"above (or set ${TOKEN_ENV} before starting the app)."
            )
        return _WORDS_BY_CODE.get(exc.code, exc.message)
    return f"{type(exc).__name__}: {exc}"


# What a person does about a refusal, by the API's code (never by its English).
_WORDS_BY_CODE = {
    "queue_unavailable": (
        "The control plane cannot reach its message queue (Redis), so nothing was sent: start "
        "redis-server (or check the control plane's queue URL), then press the same button "
        "again (Create task, Approve, Send edited hop)."
    ),
    "invalid_service_name": (
        "That service name is not allowed: a name is 1-64 letters, digits, _ or -, and not "
        "control_plane or default. Pick a service from the list and press Send edited hop again."
    ),
}
