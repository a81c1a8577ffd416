"""`stepwise serve` runs on the model it was given: STEPWISE_MODEL + OPENAI_BASE_URL.

A real `stepwise serve` process talks to a loopback OpenAI-compatible server in this process:
Agent Protocol tasks and a registered agent's `build_agent(llm)` get the server's model, and
`/health` and the start-up line name it (never a key); the demo says it is scripted.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests._serve_process import wait_healthy
from tests.llm_servers import (
    LLAMA_CPP_QUIRKS,
    OpenAIServer,
    Reply,
    default_policy,
    last_tool_result,
    offered_tools,
    react_policy,
)

from .conftest import free_port
from .test_serve_command import STEPWISE, _env

MODEL = "smollm2"
KEY = "sk-loopback-secret-0123456789"
AGENT = '''\
import json
from pathlib import Path

from agent_core.tools import FunctionTool
from agent_core.workers import FunctionCallingAgentWorker


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def build_agent(llm):
    seen = {"class": type(llm).__name__, "model": getattr(llm, "model", None),
            "base_url": str(getattr(llm, "base_url", ""))}
    Path("built_with.json").write_text(json.dumps(seen))
    return FunctionCallingAgentWorker([FunctionTool.from_defaults(fn=add)], llm)
'''


def _either_agent(body: dict[str, Any]) -> Reply:
    """The function-calling policy when tools are offered or a tool answered, else ReAct's."""
    if offered_tools(body) or last_tool_result(body) is not None:
        return default_policy(body)
    return react_policy(body)


@contextmanager
def _serving(tmp_path: Path, *args: str, **env: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """`stepwise serve --agent mine=agent.py:build_agent` in `tmp_path`, with `args`, `env`."""
    (tmp_path / "agent.py").write_text(AGENT)
    port = free_port()
    command = [*STEPWISE, "serve", "--port", str(port), "--db", str(tmp_path / "runs.db")]
    process = subprocess.Popen(
        [*command, "--agent", "mine=agent.py:build_agent", *args],
        cwd=tmp_path,
        env=_env(tmp_path, **env),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, process, output=lambda: process.stderr.read() if process.stderr else "")
        yield url, process
    finally:
        if process.poll() is None:
            process.terminate()


def _run_to_the_end(client: httpx.Client, task_id: str) -> dict[str, Any]:
    for _ in range(10):
        step = client.post(f"/ap/v1/agent/tasks/{task_id}/steps", json={})
        assert step.status_code == 200, step.text
        if step.json()["is_last"]:
            return step.json()
    raise AssertionError("the task did not finish in 10 steps")


def test_serve_runs_tasks_and_registered_agents_on_its_model_and_says_which(tmp_path):
    with OpenAIServer(policy=_either_agent, api_key=KEY) as model_server:
        env = {
            "STEPWISE_MODEL": f"openai:{MODEL}",
            "OPENAI_BASE_URL": f"{model_server.url}/v1",
            "OPENAI_API_KEY": KEY,
        }
        with _serving(tmp_path, **env) as (url, process), httpx.Client(base_url=url) as client:
            health = client.get("/health").json()
            host = model_server.url.removeprefix("http://")
            assert health["model"] == {
                "provider": "openai",
                "name": MODEL,
                "base_url": host,
                "scripted": False,
            }

            task = client.post("/ap/v1/agent/tasks", json={"input": "What is 1 + 2?"}).json()
            last = _run_to_the_end(client, task["task_id"])
            assert "3" in last["output"]
            seen = len(model_server.model_requests)
            assert seen >= 2  # The built-in ReAct agent asked the model, then answered.
            assert {r.json["model"] for r in model_server.model_requests} == {MODEL}

            body = {"input": "Add 1 and 2", "additional_input": {"agent": "mine"}}
            mine = client.post("/ap/v1/agent/tasks", json=body).json()
            last = _run_to_the_end(client, mine["task_id"])
            assert "The answer is 3" in last["output"]
            theirs = model_server.model_requests[seen:]
            assert theirs and all(offered_tools(r.json) == ["add"] for r in theirs[:1])
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    built_with = json.loads((tmp_path / "built_with.json").read_text())
    assert built_with["class"] == "OpenAILLM" and built_with["model"] == MODEL
    assert host in built_with["base_url"]
    assert f"model openai:{MODEL} at {host}" in stderr
    assert KEY not in stderr and KEY not in json.dumps(health)


def test_serve_max_tokens_caps_the_served_agents_replies_and_says_so(tmp_path):
    # Its hint said to cap replies, and serve had no way to: every request went uncapped.
    with OpenAIServer(policy=_either_agent, api_key=KEY) as model_server:
        env = {
            "STEPWISE_MODEL": f"openai:{MODEL}",
            "OPENAI_BASE_URL": f"{model_server.url}/v1",
            "OPENAI_API_KEY": KEY,
        }
        serving = _serving(tmp_path, "--max-tokens", "64", **env)
        with serving as (url, process), httpx.Client(base_url=url) as client:
            for body in (
                {"input": "What is 1 + 2?"},
                {"input": "Add 1 and 2", "additional_input": {"agent": "mine"}},
            ):
                task = client.post("/ap/v1/agent/tasks", json=body).json()
                step = client.post(f"/ap/v1/agent/tasks/{task['task_id']}/steps", json={})
                assert step.status_code == 200, step.text
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert len(model_server.model_requests) == 2
    assert [r.json.get("max_tokens") for r in model_server.model_requests] == [64, 64]
    assert "replies up to 64 tokens" in stderr


def test_serve_on_the_demo_says_it_is_scripted(tmp_path):
    with _serving(tmp_path, STEPWISE_MODEL="demo") as (url, process):
        health = httpx.get(f"{url}/health").json()
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert health["status"] == "ok"
    assert health["model"]["provider"] == "demo" and health["model"]["scripted"] is True
    assert "the scripted demo model" in stderr


def test_a_function_calling_task_runs_to_its_answer_on_a_quirky_local_server(tmp_path):
    """llama.cpp's quirks: tools ignored without tool_choice, 500 on null content, no usage."""
    with OpenAIServer(policy=default_policy, quirks=LLAMA_CPP_QUIRKS) as model_server:
        env = {"STEPWISE_MODEL": f"openai:{MODEL}", "OPENAI_BASE_URL": f"{model_server.url}/v1"}
        with _serving(tmp_path, **env) as (url, _), httpx.Client(base_url=url) as client:
            body = {"input": "Add 1 and 2", "additional_input": {"agent": "mine"}}
            task = client.post("/ap/v1/agent/tasks", json=body).json()
            last = _run_to_the_end(client, task["task_id"])
    assert "The answer is 3" in last["output"]
    requests = [r.json for r in model_server.model_requests]
    # The quirks had something to bite on: tools were offered, a tool call was answered.
    assert any(offered_tools(body) for body in requests)
    assert any(last_tool_result(body) is not None for body in requests)
    assert model_server.quirk_hits["tools_need_tool_choice"] == 0
    assert model_server.quirk_hits["null_content_500"] == 0
