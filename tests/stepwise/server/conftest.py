"""A real uvicorn server on a free loopback port, over a temporary SQLite file."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from stepwise.server import ServerSettings, create_app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running_server(settings: ServerSettings, **options: Any) -> Iterator[str]:
    """Serve `create_app(settings)` with uvicorn in a thread; yields the base URL.

    `options` go to `uvicorn.Config` (`**uvicorn_options()`: `stepwise serve`'s bounded heads).
    """
    port = free_port()
    config = uvicorn.Config(
        create_app(settings),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
        **options,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ServerSettings:
    """A server on its own database and workspaces folder, with no token."""
    monkeypatch.setenv("STEPWISE_WORKSPACES", str(tmp_path / "workspaces"))
    return ServerSettings(db=tmp_path / "stepwise.db", token=None)


@pytest.fixture
def serve(settings: ServerSettings) -> Iterator[Callable[..., str]]:
    """`serve(**changes)` starts a server (settings with `changes`); stopped after the test."""
    stack: list = []

    def start(**changes: object) -> str:
        manager = running_server(replace(settings, **changes))
        url = manager.__enter__()
        stack.append(manager)
        return url

    yield start
    for manager in reversed(stack):
        manager.__exit__(None, None, None)


@pytest.fixture
def client(serve: Callable[..., str]) -> Iterator[httpx.Client]:
    """An httpx client on a default server."""
    with httpx.Client(base_url=serve(), timeout=30) as http:
        yield http
