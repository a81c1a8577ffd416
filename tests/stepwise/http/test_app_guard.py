"""The app's guard at the ASGI level: WebSocket hosts and origins, frames, the token login.

The browser tests (tests/e2e/test_app_guard_in_browser.py) run the same guard in front of the
real app; these pin each rule on a small Starlette app.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient
from starlette.websockets import WebSocket, WebSocketDisconnect

from stepwise.cli.main import main as stepwise_main
from stepwise.http.browser_guard import BrowserGuard
from stepwise.http.token_login import TokenLogin, login_cookie_name

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "0123456789abcdef-token"
WS_URL = "ws://localhost:8501/_stcore/stream"


async def _page(request) -> PlainTextResponse:
    return PlainTextResponse("the app")


async def _stream(websocket: WebSocket) -> None:
    await websocket.accept()
    await websocket.send_text("hello")
    await websocket.close()


def _client(*, token: str | None = None, names: frozenset[str] = frozenset()) -> TestClient:
    app = Starlette(
        routes=[
            Route("/", _page),
            Route("/upload", _page, methods=["PUT"]),
            Route("/_stcore/health", _page),
            WebSocketRoute("/_stcore/stream", _stream),
        ],
        middleware=[
            Middleware(
                BrowserGuard, allowed_hosts=names, json_bodies_only=False, own_frames_only=True
            ),
            Middleware(TokenLogin, token=token),
        ],
    )
    return TestClient(app, base_url="http://localhost:8501")


def _socket(client: TestClient, **headers: str) -> str:
    try:
        with client.websocket_connect(WS_URL, headers=headers) as socket:
            return socket.receive_text()
    except WebSocketDisconnect as refused:
        return f"refused {refused.code}"


@pytest.mark.parametrize(
    ("host", "origin", "answer"),
    [
        ("localhost:8501", "http://localhost:8501", "hello"),
        ("127.0.0.1:8501", "http://127.0.0.1:8501", "hello"),
        ("localhost:8501", None, "hello"),  # A program: no Origin.
        ("rebind.test:8501", "http://rebind.test:8501", "refused 1008"),  # DNS rebinding.
        ("localhost:8501", "http://localhost:3000", "refused 1008"),  # Another port.
        ("localhost:8501", "http://evil.test", "refused 1008"),
        ("localhost:8501", "null", "refused 1008"),  # A sandboxed frame or a file page.
    ],
)
def test_the_websocket_takes_only_its_own_pages(host, origin, answer):
    headers = {"host": host} | ({"origin": origin} if origin else {})
    assert _socket(_client(), **headers) == answer


def test_an_allowed_name_is_served_on_both_http_and_the_websocket():
    client = _client(names=frozenset({"stepwise.example"}))
    page = client.get("/", headers={"host": "stepwise.example:8501"})
    origin = "http://stepwise.example:8501"
    socket = _socket(client, host="stepwise.example:8501", origin=origin)
    assert (page.status_code, socket) == (200, "hello")
    assert client.get("/", headers={"host": "other.example"}).status_code == 403


def test_pages_may_be_framed_only_by_the_apps_own_pages():
    page = _client().get("/")
    assert page.headers["content-security-policy"] == "frame-ancestors 'self'"
    assert page.headers["x-frame-options"] == "SAMEORIGIN"


def test_the_apps_uploads_are_not_held_to_json_bodies_but_to_their_origin():
    client = _client()
    form = {"content-type": "multipart/form-data; boundary=x"}
    own = client.put(
        "/upload", content=b"--x--", headers={**form, "origin": "http://localhost:8501"}
    )
    other = client.put("/upload", content=b"--x--", headers={**form, "origin": "http://evil.test"})
    assert own.status_code == 200
    assert other.status_code == 403 and other.json()["error"]["code"] == "cross_origin_refused"


def test_with_a_token_nothing_is_served_until_the_browser_logs_in():
    client = _client(token=TOKEN)
    asked = client.get("/")
    wrong = client.get("/?token=nope")
    health = client.get("/_stcore/health")  # A supervisor's check needs no login.
    assert asked.status_code == 401 and "needs its token" in asked.text
    assert TOKEN not in asked.text
    assert wrong.status_code == 401 and "not the app's" in wrong.text
    assert health.status_code == 200
    assert _socket(client, origin="http://localhost:8501") == "refused 1008"


def test_the_login_url_sets_a_cookie_and_drops_the_token_from_the_address():
    client = _client(token=TOKEN)
    login = client.get(f"/?page=tasks&token={TOKEN}", follow_redirects=False)
    cookie = login.cookies[login_cookie_name(8501)]
    assert login.status_code == 302 and login.headers["location"] == "/?page=tasks"
    assert TOKEN not in cookie and "HttpOnly" in login.headers["set-cookie"]
    assert client.get("/").status_code == 200  # The client keeps the cookie, as a browser does.
    assert _socket(client, origin="http://localhost:8501") == "hello"


def test_a_program_may_send_the_token_as_a_bearer():
    client = _client(token=TOKEN)
    assert client.get("/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert client.get("/", headers={"authorization": "Bearer wrong"}).status_code == 401


def test_a_cookie_of_another_token_does_not_log_in():
    client = _client(token=TOKEN)
    other = _client(token=TOKEN + "-other").get(f"/?token={TOKEN}-other", follow_redirects=False)
    client.cookies.set(login_cookie_name(8501), other.cookies[login_cookie_name(8501)])
    assert client.get("/").status_code == 401


def test_stepwise_ui_refuses_another_address_without_a_token(monkeypatch, capsys):
    monkeypatch.delenv("STEPWISE_API_TOKEN", raising=False)
    assert stepwise_main(["ui", "--host", "0.0.0.0"]) == 1
    assert "refusing to listen on 0.0.0.0 without a token" in capsys.readouterr().err
    monkeypatch.setenv("STEPWISE_API_TOKEN", "short")
    assert stepwise_main(["ui", "--host", "0.0.0.0"]) == 1
    assert "5-character token" in capsys.readouterr().err


def test_streamlit_run_app_py_beyond_loopback_without_a_token_does_not_start(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "STEPWISE_API_TOKEN"}
    command = [
        sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
        "--server.address", "0.0.0.0", "--server.port", "0", "--server.headless", "true",
        "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, timeout=60)
    assert done.returncode == 2, done.stderr.decode()[-2000:]
    assert b"refusing to listen on 0.0.0.0 without a token" in done.stderr


def test_a_link_to_the_default_pages_own_path_goes_to_the_root_with_its_query():
    from stepwise.app.guard import DefaultPageLink

    app = Starlette(
        routes=[Route("/", _page)], middleware=[Middleware(DefaultPageLink, path="/stepper")]
    )
    client = TestClient(app, base_url="http://localhost:8501")
    moved = client.get("/stepper?task=3f2c", follow_redirects=False)
    assert (moved.status_code, moved.headers["location"]) == (302, "/?task=3f2c")
    assert client.get("/stepper/", follow_redirects=False).headers["location"] == "/"
    assert client.get("/").text == "the app"
