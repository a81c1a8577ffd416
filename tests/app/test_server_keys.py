"""A key typed for a local or custom server goes to that server, over a real socket, and no
other key does: not the OpenAI key typed in Settings, not `OPENAI_API_KEY`.

The servers are `tests.llm_servers.OpenAIServer`s on 127.0.0.1; the fixtures of
tests/app/conftest.py give each test a fresh database and workspace folder in `tmp_path`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from agent_core.llms import ChatMessage
from agent_core.llms.openai import OpenAILLM
from agent_core.spec import AgentSpec
from agent_core.trace import export_trace
from stepwise.app.components import runtime, state
from stepwise.app.components.settings_form import CUSTOM
from tests.llm_servers import OpenAIServer, Reply

from .conftest import only_task_state

SERVER_KEY = "srv-key-Hq4tX9bN2wPe"
OPENAI_KEY = "sk-typed-Lr7yU1cK5oVd"
ENV_KEY = "sk-env-Gm3aS8jT6iYf"
ANSWER = "Thought: I know this.\nAnswer: 5"


def _authorizations(server: OpenAIServer) -> list[str]:
    return [request.headers.get("authorization", "") for request in server.model_requests]


def _files_containing(root: Path, needle: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


# --- the adapter: an explicit key goes to base_url, the environment's never does ------------


def _ask(llm: OpenAILLM) -> str:
    return asyncio.run(llm.chat([ChatMessage(role="user", content="2 + 3?")])).message.content


def test_openai_llm_sends_a_given_key_to_its_base_url_and_never_the_environments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    with OpenAIServer(["one", "two"]) as server:
        url = f"{server.url}/v1"
        assert _ask(OpenAILLM("m", api_key=SERVER_KEY, base_url=url)) == "one"
        assert _ask(OpenAILLM("m", base_url=url)) == "two"

    assert _authorizations(server) == [f"Bearer {SERVER_KEY}", "Bearer not-needed"]


# --- runner_for: which session key the runner's model gets ---------------------------------


@pytest.fixture
def session(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A plain dict as this test's `st.session_state` (no AppTest: `runner_for` called directly)."""
    fake: dict[str, Any] = {}
    monkeypatch.setattr(st, "session_state", fake)
    yield fake


def _llm_of(spec: AgentSpec) -> OpenAILLM:
    llm = getattr(runtime.runner_for(spec).agent_worker, "llm", None)  # the built-in workers'
    assert isinstance(llm, OpenAILLM)
    return llm


def test_runner_for_gives_a_server_its_own_key_and_never_the_openai_key(
    session: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    state.set_api_key("openai", OPENAI_KEY)
    with OpenAIServer() as server, OpenAIServer() as other:
        url = f"{server.url}/v1"
        state.set_api_key(state.server_provider(f"{url}/"), SERVER_KEY)  # "/" or not: one server
        server.script(ANSWER)
        other.script(ANSWER)

        llm = _llm_of(AgentSpec(provider="openai", model="m", base_url=url))
        assert llm.base_url == url
        _ask(llm)
        # A server nobody typed a key for gets none, not the key of another server.
        _ask(_llm_of(AgentSpec(provider="openai", model="m", base_url=f"{other.url}/v1")))

    assert _authorizations(server) == [f"Bearer {SERVER_KEY}"]
    assert _authorizations(other) == ["Bearer not-needed"]


def test_runner_for_gives_the_openai_key_to_openai_only(
    session: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    state.set_api_key("openai", OPENAI_KEY)
    with OpenAIServer([ANSWER]) as server:
        # Stands in for OpenAI's API: the spec names no server, so the SDK's default is used.
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        _ask(_llm_of(AgentSpec(provider="openai", model="gpt-4o-mini")))

    assert _authorizations(server) == [f"Bearer {OPENAI_KEY}"]


# --- the whole app: Settings, then a step on the stepper, over a real socket -----------------


def _settings(app: AppTest) -> AppTest:
    app.run()
    app.switch_page("app_pages/settings.py")
    return app.run()


def _ok(app: AppTest) -> AppTest:
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_a_key_typed_for_a_server_reaches_it_when_a_step_runs_and_is_written_nowhere(
    app: AppTest,
    tmp_path: Path,
    db_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    with OpenAIServer([Reply(text=ANSWER)], api_key=SERVER_KEY) as server:
        url = f"{server.url}/v1"
        _settings(app).selectbox(key="settings-provider").select(CUSTOM).run()
        app.text_input(key="settings-base-url").input(url)
        app.text_input(key=f"settings-model-{CUSTOM}").input("loopback-model")
        app.button(key="settings-save-model").click().run()
        assert url in app.text_input(key="settings-key-server").label
        for slug, key in (("server", SERVER_KEY), ("openai", OPENAI_KEY)):
            app.text_input(key=f"settings-key-{slug}").input(key)
            app.button(key=f"settings-use-key-{slug}").click().run()

        app.switch_page("app_pages/stepper.py").run()
        app.text_area(key="form-task").input("What is 2 + 3?").run()
        _ok(app.button(key="form-create").click().run())
        (run,) = [b for b in app.button if b.key and b.key.startswith("run-")]
        _ok(run.click().run())

    assert _authorizations(server) == [f"Bearer {SERVER_KEY}"]  # and so the server answered
    task_state = only_task_state(db_path)
    (output,) = task_state.completed_steps
    assert output.is_last and "5" in output.output
    trace = export_trace(task_state)
    logged = caplog.text + "".join(capfd.readouterr())
    for key in (SERVER_KEY, OPENAI_KEY, ENV_KEY):
        assert key not in trace
        assert _files_containing(tmp_path, key) == []  # the database, the workspaces, any file
        assert key not in logged
