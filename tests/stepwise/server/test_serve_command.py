"""`stepwise serve` as a user runs it: a real process, its port, its database, its refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests._serve_process import wait_healthy

from .conftest import free_port

STEPWISE = [sys.executable, "-m", "stepwise.cli"]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "STEPWISE_WORKSPACES": str(tmp_path / "ws"), **extra}
    env.pop("STEPWISE_API_TOKEN", None)
    return {**env, **extra}


def test_serve_listens_on_loopback_with_its_database_and_the_api_docs(tmp_path):
    port, db = free_port(), tmp_path / "runs.db"
    process = subprocess.Popen(
        [*STEPWISE, "serve", "--port", str(port), "--db", str(db)],
        cwd=tmp_path,
        env=_env(tmp_path, STEPWISE_API_TOKEN="t0ken-for-the-test"),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, process, output=lambda: process.stderr.read() if process.stderr else "")
        auth = {"Authorization": "Bearer t0ken-for-the-test"}
        assert httpx.get(f"{url}/openapi.json").status_code == 401
        schema = httpx.get(f"{url}/openapi.json", headers=auth).json()
        assert schema["info"]["title"] == "Stepwise"
        assert httpx.get(f"{url}/docs", headers=auth).status_code == 200
        assert db.exists()  # The store is the file given, shared with the app.
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert f"serving http://127.0.0.1:{port}" in stderr
    assert "t0ken-for-the-test" not in stderr


def test_serve_refuses_a_public_address_without_a_token_and_says_why(tmp_path):
    done = subprocess.run(
        [*STEPWISE, "serve", "--host", "0.0.0.0", "--port", str(free_port())],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "refusing to listen on 0.0.0.0 without a token" in done.stderr
    assert "STEPWISE_API_TOKEN" in done.stderr
    assert not (tmp_path / "stepwise.db").exists()  # Refused before anything was opened.
