"""AgentSpec: serialisable, key-free descriptions that build working runners."""

from __future__ import annotations

import pydantic
import pytest

from agent_core.errors import UserError
from agent_core.llms.anthropic import AnthropicLLM
from agent_core.llms.openai import OpenAILLM
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.workers import (
    FunctionCallingAgentWorker,
    PlannerAgentWorker,
    ReActAgentWorker,
)


def test_a_spec_round_trips_and_refuses_a_key_field():
    spec = AgentSpec(worker="function_calling", provider="openai", tools=("calculator", "files"))
    assert AgentSpec.model_validate_json(spec.model_dump_json()) == spec
    with pytest.raises(pydantic.ValidationError, match="api_key"):
        AgentSpec.model_validate({"api_key": "sk-secret"})


@pytest.mark.parametrize(
    ("worker", "expected"),
    [
        ("react", ReActAgentWorker),
        ("function_calling", FunctionCallingAgentWorker),
        ("planner", PlannerAgentWorker),
    ],
)
def test_each_worker_kind_builds(worker, expected, tmp_path):
    spec = AgentSpec(worker=worker, workspace=str(tmp_path), tools=("calculator", "python"))
    assert isinstance(spec.build_worker(), expected)


def test_tools_are_built_by_name_once_each(tmp_path):
    spec = AgentSpec(workspace=str(tmp_path), tools=("arithmetic", "files", "files", "image"))
    worker = spec.build_worker()
    assert isinstance(worker, ReActAgentWorker)
    assert sorted(worker.tools) == sorted(
        [
            "add",
            "subtract",
            "multiply",
            "divide",
            "read_file",
            "write_file",
            "list_files",
            "make_image",
        ]
    )


def test_real_providers_need_a_key_but_never_store_it(monkeypatch):
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        AgentSpec(provider="openai").build_llm()
    llm = AgentSpec(provider="openai", model="gpt-4.1-mini").build_llm(api_key="sk-live-123")
    assert isinstance(llm, OpenAILLM) and llm.model == "gpt-4.1-mini"
    assert "sk-live-123" not in repr(llm)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    assert isinstance(AgentSpec(provider="anthropic").build_llm(), AnthropicLLM)


def test_a_local_openai_compatible_server_needs_no_key():
    llm = AgentSpec(provider="openai", model="llama3.2", base_url="ollama").build_llm()
    assert isinstance(llm, OpenAILLM) and llm.base_url.startswith("http://localhost:11434")


def test_tasks_record_the_spec_and_a_new_runner_continues_them(tmp_path):
    spec = AgentSpec(workspace=str(tmp_path / "ws"))
    first = spec.build_runner(store=SQLiteStore(tmp_path / "s.db"))
    task = first.create_task("What is (121 * 3) + 42?")
    first.run_step(task.task_id)
    recorded = AgentSpec.model_validate(first.get_task(task.task_id).spec)
    second = recorded.build_runner(store=SQLiteStore(tmp_path / "s.db"))
    assert second.run_until(task.task_id).reason == "last_step"
    assert second.finalize_response(task.task_id).response == "(121 * 3) + 42 = 405"
