"""A real `streamlit run` on a free localhost port, and headless Debian Chromium driving it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_up(url: str, server: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    raise RuntimeError(f"streamlit did not answer at {url} within {timeout:.0f}s")


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing; `make test` installs it with apt")
        pytest.skip("Debian chromium is not installed (make test installs it)")
    return CHROMIUM


@pytest.fixture
def app_url(tmp_path: Path) -> Iterator[str]:
    """The app on a free port, with its database and workspaces in `tmp_path`."""
    from stepwise.app.components.dag_view import ensure_static_assets

    ensure_static_assets()  # As `make run` does: the static folder exists before the server.
    port = _free_port()
    env = {**os.environ, "STEPWISE_DB": str(tmp_path / "e2e.db")}
    command = streamlit_run(ROOT / "app.py", port, "--server.enableStaticServing", "true")
    log = tmp_path / "streamlit.log"
    with serving(command, cwd=tmp_path, env=env, log=log, port=port) as url:
        yield url


def streamlit_run(script: Path, port: int, *options: str, address: str = "localhost") -> list[str]:
    """`streamlit run script` on `address:port`, headless, with no file watcher or usage stats."""
    return [
        sys.executable, "-m", "streamlit", "run", str(script),
        "--server.port", str(port), "--server.address", address,
        "--server.headless", "true", "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none", "--runner.magicEnabled", "false", *options,
    ]  # fmt: skip


@contextmanager
def serving(
    command: Sequence[str | Path], *, cwd: Path, env: dict[str, str], log: Path, port: int
) -> Iterator[str]:
    """Run `command` (a server on `port`) until the block ends; its output goes to `log`."""
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=out)
        url = f"http://localhost:{port}"
        try:
            _wait_until_up(url, server)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()


@contextmanager
def serve_script(script: Path, tmp_path: Path) -> Iterator[str]:
    """A Streamlit server running `script` (a page under test) until the block ends."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = streamlit_run(script, port)
    log = tmp_path / "streamlit.log"
    with serving(command, cwd=tmp_path, env=env, log=log, port=port) as url:
        yield url


@pytest.fixture
def page(chromium_path: str, app_url: str):
    """A fresh browser page that records every request it makes."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1500, "height": 1000})
        tab = context.new_page()
        tab.requests = []  # type: ignore[attr-defined]
        tab.on("request", lambda request: tab.requests.append(request.url))  # type: ignore[attr-defined]
        tab.dialogs = []  # type: ignore[attr-defined]
        tab.on("dialog", lambda dialog: (tab.dialogs.append(dialog.message), dialog.dismiss()))  # type: ignore[attr-defined]
        tab.goto(app_url)
        try:
            yield tab
        finally:
            browser.close()


def idle(page: Any, settle: int = 300) -> None:
    """Wait until the page's script run has ended (no "Running…" widget), then a little.

    A click that lands while a rerun is still drawing can be lost with the old widgets.
    """
    page.wait_for_timeout(200)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=20_000
    )
    page.wait_for_timeout(settle)
