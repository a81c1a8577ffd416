"""Waiting for a `stepwise serve` (or control plane) process the tests started."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

__all__ = ["serve_process", "wait_healthy"]


def wait_healthy(
    url: str, process: subprocess.Popen, *, output: Callable[[], str] = lambda: ""
) -> None:
    """Return once `url`/health answers 200; fail with `output()` if the process exits first."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited: {output()}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("the server did not answer /health within 60 s")


@contextmanager
def serve_process(db: str, *, cwd: Path, env: Mapping[str, str]) -> Iterator[str]:
    """`stepwise serve --db DB` as a process of its own on a free port, with no token; its URL.

    Its output goes to `cwd / "serve.log"`, quoted if it exits before it answers.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in env.items() if k != "STEPWISE_API_TOKEN"}
    log = cwd / "serve.log"
    command = [sys.executable, "-m", "stepwise.cli", "serve", "--port", str(port), "--db", db]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, output=lambda: log.read_text()[-3000:])
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # An event stream still open keeps uvicorn waiting.
            process.kill()
            process.wait(timeout=30)
