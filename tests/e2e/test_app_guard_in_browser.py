"""Other web pages, in headless Chromium, get nothing from the app (issue 28).

Chromium's Private Network Access checks block some of these loads by default; Firefox and
Safari have no such check, so the tests turn it off to stand in for them, and map
`rebind.test` to 127.0.0.1 to stand in for a name re-pointed there (DNS rebinding).

(a) DNS rebinding: a page at `http://rebind.test:PORT` is, to the browser, the app's own origin.
    It gets a 403 and no WebSocket, framed or not.
(b) A page on another port of this machine (a notebook, a dev server) cannot open the app's
    WebSocket, nor frame the app.
(c) The app's own page at http://localhost:PORT still works, WebSocket and all.
(d) With a token, a browser logs in once with `/?token=...` and keeps working after a reload.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from .conftest import CHROMIUM_ARGS, ROOT, _free_port, serving, streamlit_run

NO_PRIVATE_NETWORK_CHECKS = (
    "--disable-features=BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,"
    "PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks,"
    "LocalNetworkAccessChecksWebSockets"
)
REBIND = "--host-resolver-rules=MAP rebind.test 127.0.0.1"

# What a page's script does to reach the app's WebSocket: "open" means it could drive the app.
OPEN_SOCKET = """(url) => new Promise((done) => {
  const socket = new WebSocket(url);
  socket.onopen = () => { done('open'); socket.close(); };
  socket.onerror = () => done('refused');
  setTimeout(() => done('no answer'), 10000);
})"""

ATTACKER = b"""<!doctype html><title>another site</title>
<iframe id=app width=800 height=600></iframe>"""


class _Attacker(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(ATTACKER)))
        self.end_headers()
        self.wfile.write(ATTACKER)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def attacker_port() -> Iterator[int]:
    """Another web server on this machine: the attacker's page, on a port of its own."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _browser(chromium_path: str) -> tuple[Any, Any]:
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    args = [*CHROMIUM_ARGS, NO_PRIVATE_NETWORK_CHECKS, REBIND]
    return playwright, playwright.chromium.launch(executable_path=chromium_path, args=args)


def _framed(page: Any, url: str) -> str:
    """What the attacker's iframe shows once it tried to load `url` (empty if refused)."""
    page.evaluate("(url) => { document.getElementById('app').src = url; }", url)
    page.wait_for_timeout(3000)
    [frame] = [f for f in page.frames if f != page.main_frame]
    try:
        return frame.content()
    except Exception:  # A frame the browser refused to show has no readable document.
        return ""


def test_a_rebinding_page_gets_a_403_and_no_websocket(chromium_path, app_url, attacker_port):
    port = app_url.rsplit(":", 1)[1]
    playwright, browser = _browser(chromium_path)
    try:
        page = browser.new_page()
        response = page.goto(f"http://rebind.test:{port}/")
        refused = page.inner_text("body")
        socket = page.evaluate(OPEN_SOCKET, f"ws://rebind.test:{port}/_stcore/stream")
        page.goto(f"http://rebind.test:{attacker_port}/")  # The attacker's own page, framing.
        framed = _framed(page, f"http://rebind.test:{port}/")
    finally:
        browser.close()
        playwright.stop()

    assert response is not None and response.status == 403
    assert "host_not_allowed" in refused
    assert socket == "refused"
    assert "stApp" not in framed and "Stepwise" not in framed


def test_a_page_on_another_port_cannot_open_or_frame_the_app(chromium_path, app_url, attacker_port):
    playwright, browser = _browser(chromium_path)
    try:
        page = browser.new_page()
        page.goto(f"http://localhost:{attacker_port}/")
        socket = page.evaluate(OPEN_SOCKET, f"{app_url.replace('http', 'ws')}/_stcore/stream")
        framed = _framed(page, f"{app_url}/")
        own = browser.new_page()  # The app's own page: the same socket opens.
        own.goto(app_url)
        own.get_by_text("Demo scenarios").wait_for(timeout=30_000)
        own_socket = own.evaluate(OPEN_SOCKET, f"{app_url.replace('http', 'ws')}/_stcore/stream")
        own.goto(f"{app_url}/stepper?task=0123")  # A link to the default page by its path.
        own.get_by_text("This task could not be shown").wait_for(timeout=30_000)
        linked = own.url, own.get_by_text("Page not found").count()
    finally:
        browser.close()
        playwright.stop()

    assert socket == "refused"
    assert "stApp" not in framed
    assert own_socket == "open"
    assert linked == (f"{app_url}/?task=0123", 0)


@pytest.fixture
def app_with_token(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The app on 127.0.0.1 with `STEPWISE_API_TOKEN` set: (its URL, the token)."""
    token = "a-token-of-enough-length-0123456789"
    port = _free_port()
    env = {**os.environ, "STEPWISE_DB": str(tmp_path / "e2e.db"), "STEPWISE_API_TOKEN": token}
    command = streamlit_run(ROOT / "app.py", port, address="127.0.0.1")
    log = tmp_path / "streamlit.log"
    with serving(command, cwd=tmp_path, env=env, log=log, port=port) as url:
        yield url, token
    assert token not in log.read_text()  # The app names the variable, never its value.


def test_with_a_token_a_browser_logs_in_once_with_the_url(chromium_path, app_with_token):
    url, token = app_with_token
    playwright, browser = _browser(chromium_path)
    try:
        page = browser.new_page()
        anonymous = page.goto(url)
        asked = page.inner_text("body")
        wrong = page.goto(f"{url}/?token=not-the-token")
        page.goto(f"{url}/tasks?token={token}")
        landed = page.url
        page.get_by_text("No tasks yet").wait_for(timeout=30_000)  # The page ran: socket open.
        page.reload()
        page.get_by_text("No tasks yet").wait_for(timeout=30_000)
        cookies = page.context.cookies()
    finally:
        browser.close()
        playwright.stop()

    assert anonymous is not None and anonymous.status == 401
    assert "needs its token" in asked and token not in asked
    assert wrong is not None and wrong.status == 401
    assert landed == f"{url}/tasks"  # The token leaves the address bar and the history.
    [login] = [c for c in cookies if c["name"].startswith("stepwise-login-")]
    assert login["httpOnly"] and token not in login["value"]
