"""The app shows, live, a step that `stepwise serve` runs on the same database, and stops it.

Three processes on one database, as a user has them: `stepwise serve` running a step whose
model (the loopback OpenAI server) streams its reply slowly, the app (`streamlit run`) on the
same database, and headless Chromium on the app. On a SQLite file the app's host reads the
step's token deltas from the relay table (`agent_core.host.live_relay`) and its Stop asks the
server's process through a stop request (`agent_core.host.stops`); on PostgreSQL both go by
LISTEN/NOTIFY (`agent_core.host.notify`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from agent_core.host import Host
from agent_core.runtime.step_runs import STOPPED_BY_YOU
from agent_core.types import StepStatus
from tests._postgres_server import postgres_schema, postgres_server, postgres_url  # noqa: F401
from tests._serve_process import serve_process
from tests.llm_servers import OpenAIServer, Reply

from .conftest import ARTIFACTS, ROOT, _free_port, serving, streamlit_run

STORY = " ".join(f"word{n}" for n in range(200))


def slow_story(body: dict[str, Any]) -> Reply:
    """A long reply, one word every 0.1 s: the step runs for about 20 s unless stopped."""
    return Reply(text=f"Answer: {STORY}", delay_s=0.1)


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The shared database: a SQLite file (the relay table), or PostgreSQL (NOTIFY)."""
    if request.param == "sqlite":
        return str(tmp_path / "shared.db")
    url = request.getfixturevalue("postgres_url")
    schema = request.getfixturevalue("postgres_schema")  # A schema of its own, dropped after.
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


@pytest.fixture
def model() -> Iterator[OpenAIServer]:
    with OpenAIServer(policy=slow_story) as server:
        yield server


@pytest.fixture
def served(tmp_path: Path, db: str, model: OpenAIServer) -> Iterator[str]:
    """`stepwise serve` on the shared file, its model the loopback server; its URL."""
    env = {
        **os.environ,
        "STEPWISE_WORKSPACES": str(tmp_path / "ws"),
        "STEPWISE_MODEL": "openai:loopback-model",
        "OPENAI_BASE_URL": f"{model.url}/v1",
        "OPENAI_API_KEY": "sk-loopback",
    }
    with serve_process(db, cwd=tmp_path, env=env) as url:
        yield url


@pytest.fixture
def app_on(tmp_path: Path, db: str, model: OpenAIServer) -> Iterator[str]:
    """The app on the shared file, with the server's model settings (one user, one machine)."""
    from stepwise.app.components.dag_view import ensure_static_assets

    ensure_static_assets()
    port = _free_port()
    env = {
        **os.environ,
        "STEPWISE_DB": db,
        "STEPWISE_WORKSPACES": str(tmp_path / "ws"),
        "OPENAI_BASE_URL": f"{model.url}/v1",
        "OPENAI_API_KEY": "sk-loopback",
    }
    command = streamlit_run(ROOT / "app.py", port, "--server.enableStaticServing", "true")
    with serving(command, cwd=tmp_path, env=env, log=tmp_path / "streamlit.log", port=port) as url:
        yield url


def _run_step_on_server(url: str, task_id: str, answer: dict[str, Any]) -> None:
    with httpx.Client(timeout=120) as http:
        reply = http.post(f"{url}/ap/v1/agent/tasks/{task_id}/steps", json={})
        answer["status"] = reply.status_code


def test_the_app_shows_live_tokens_of_a_step_serve_runs_and_stops_it(
    page: Page, served: str, app_on: str, db: str
) -> None:
    task = httpx.post(f"{served}/ap/v1/agent/tasks", json={"input": "Tell me a story"}, timeout=30)
    task_id = task.json()["task_id"]
    answer: dict[str, Any] = {}
    stepping = threading.Thread(target=_run_step_on_server, args=(served, task_id, answer))
    stepping.start()

    page.goto(f"{app_on}/?task={task_id}")
    box = page.get_by_text("Running step in another process")
    box.wait_for(timeout=60_000)
    live = page.locator("code").filter(has_text="word")
    expect(live.first).to_contain_text("word5", timeout=30_000)
    first = live.first.inner_text()
    expect(live.first).not_to_have_text(first, timeout=10_000)  # It grows as it streams.
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "live_across_processes.png"), full_page=True)

    page.get_by_role("button", name="Stop", exact=True).first.click()
    stepping.join(timeout=60)
    assert not stepping.is_alive()
    expect(page.get_by_text("Stopped the step.").first).to_be_visible(timeout=30_000)
    expect(page.get_by_text("Running step in another process")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "live_across_processes_stopped.png"), full_page=True)
    with Host(db) as host:
        [step] = host.reader().get_task_state(task_id).steps.values()
    assert step.status is StepStatus.FAILED and step.error == STOPPED_BY_YOU, step
