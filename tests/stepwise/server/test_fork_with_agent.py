"""The HTTP fork route with `{"agent": NAME}` (issue 30) on a real server.

A pydantic-ai run, traced by its own instrumentation as OTLP JSON, is imported into the
server's database; its step 2 is forked over HTTP with an agent registered with `--agent`,
which runs on the server's model (the loopback OpenAI server) to its answer. An agent name
nobody registered is a 400 with a code, and nothing is forked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from agent_core.recordings.importers import import_file
from agent_core.store import SQLiteStore
from stepwise.server import ServerSettings
from stepwise.server.settings import ModelDefault
from tests.agent_core.recordings.importers._traces import otlp_json, pydantic_ai_trace
from tests.llm_servers import OpenAIServer

AGENT = '''\
from agent_core.tools import FunctionTool
from agent_core.workers import FunctionCallingAgentWorker


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def build_agent(llm):
    return FunctionCallingAgentWorker([FunctionTool.from_defaults(fn=multiply)], llm)
'''


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    """The server's model: a loopback OpenAI server, read from the environment as in serve."""
    with OpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
        yield server


@pytest.fixture
def http(
    serve: Callable[..., str],
    settings: ServerSettings,
    model_server: OpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[httpx.Client]:
    """A server on the loopback model with agent `calc` registered (as `--agent` does)."""
    (tmp_path / "calc.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STEPWISE_AGENTS", json.dumps({"calc": "calc.py:build_agent"}))
    model = ModelDefault(provider="openai", name="loopback-model")
    with httpx.Client(base_url=serve(default_model=model), timeout=30) as client:
        yield client


def _imported(db: Path) -> str:
    """The pydantic-ai trace imported into the server's database; the task's id."""
    store = SQLiteStore(db)
    try:
        [task_id] = import_file(json.dumps(otlp_json(pydantic_ai_trace())).encode(), store)
    finally:
        store.close()
    return task_id


def _task(client: httpx.Client, task_id: str) -> dict:
    response = client.get(f"/stepwise/v1/tasks/{task_id}")
    assert response.status_code == 200, response.text
    return response.json()


def _fork(client: httpx.Client, task_id: str, step_id: str, body: dict) -> httpx.Response:
    return client.post(f"/stepwise/v1/tasks/{task_id}/steps/{step_id}/fork", json=body)


def test_an_imported_task_forks_at_step_2_with_a_named_agent_and_runs_to_its_answer(
    http: httpx.Client, settings: ServerSettings, model_server: OpenAIServer
) -> None:
    imported = _imported(Path(settings.db))
    steps = _task(http, imported)["steps"]
    assert [s["status"] for s in steps][:2] == ["completed", "completed"]

    response = _fork(http, imported, steps[1]["step_id"], {"agent": "calc"})
    assert response.status_code == 200, response.text
    fork = response.json()
    assert fork["task_id"] != imported and fork["forked_from"]["step_id"] == steps[1]["step_id"]

    model_server.script("Six times seven is 42.")
    step = http.post(f"/ap/v1/agent/tasks/{fork['task_id']}/steps", json={})
    assert step.status_code == 200, step.text
    assert step.json()["is_last"] and step.json()["output"] == "Six times seven is 42."
    [request] = model_server.model_requests  # The fork's step asked the model, live.
    assert request.json["model"] == "loopback-model"
    assert [m["role"] for m in request.json["messages"]][-2:] == ["assistant", "tool"]
    assert len(_task(http, imported)["steps"]) == len(steps)  # The original is untouched.


def test_an_agent_nobody_registered_is_a_400_with_a_code(
    http: httpx.Client, settings: ServerSettings, model_server: OpenAIServer
) -> None:
    imported = _imported(Path(settings.db))
    step_id = _task(http, imported)["steps"][1]["step_id"]

    response = _fork(http, imported, step_id, {"agent": "nobody"})

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "bad_request"
    assert "nobody" in error["message"] and "calc" in error["hint"]
    assert not model_server.model_requests
