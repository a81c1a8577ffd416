"""Waiting for a `stepwise serve` (or control plane) process the tests started."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import httpx

__all__ = ["wait_healthy"]


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
