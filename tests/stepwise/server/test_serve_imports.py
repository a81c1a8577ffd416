"""`stepwise serve` imports only the user code a request asks for, never to build a hint.

Issue 23, item 12: a task naming an unregistered agent was answered with the registered
names, found by importing every registered agent module (running its top-level code).
"""

from __future__ import annotations

import subprocess
import textwrap

import httpx

from tests._serve_process import wait_healthy

from .conftest import free_port
from .test_serve_command import STEPWISE, _env

_AGENT_FILE = textwrap.dedent(
    """
    from pathlib import Path

    Path(__file__).with_name("imported.marker").write_text("imported")

    from agent_core.workers import ReActAgentWorker

    def agent(llm):
        return ReActAgentWorker.from_tools([], llm=llm)
    """
)


def test_an_unknown_agent_is_refused_with_the_names_and_no_import(tmp_path):
    (tmp_path / "mine.py").write_text(_AGENT_FILE)
    marker = tmp_path / "imported.marker"
    port = free_port()
    process = subprocess.Popen(
        [*STEPWISE, "serve", "--port", str(port), "--agent", "mine=mine.py:agent"],
        cwd=tmp_path,
        env=_env(tmp_path),
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, process, output=lambda: process.stderr.read() if process.stderr else "")
        assert not marker.exists()  # Starting imports no user module.
        body = {"input": "hi", "additional_input": {"agent": "nope"}}
        refused = httpx.post(f"{url}/ap/v1/agent/tasks", json=body, timeout=30)
        assert refused.status_code == 400, refused.text
        assert "registered agents: mine" in refused.json()["error"]["hint"]
        assert not marker.exists()  # The hint named it without importing it.

        # Asked for by name, it is imported (the marker proves the check above could fail).
        body["additional_input"]["agent"] = "mine"
        assert httpx.post(f"{url}/ap/v1/agent/tasks", json=body, timeout=30).status_code == 200
        assert marker.exists()
    finally:
        process.terminate()
        process.wait(timeout=30)
