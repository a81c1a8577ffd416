"""`stepwise test --live --model provider:model`: the cases' agents run on the model named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.recordings import case_from_task, save_case
from agent_core.spec import AgentSpec
from agent_core.user_code import UserCodeRegistry
from stepwise.cli.main import main
from tests.agent_core._user_projects import isolated_imports  # noqa: F401 - a fixture
from tests.agent_core.conftest import action, answer
from tests.agent_core.recordings._projects import write_agent
from tests.llm_servers import OpenAIServer, Reply, react_policy

pytestmark = pytest.mark.usefixtures("isolated_imports")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-live-key-0123456789")
    write_agent(tmp_path)
    return tmp_path


def record(project: Path, **spec: Any) -> Path:
    """Record "1 + 2" on a scripted model with the spec's own model (the demo); the case file."""
    target = f"{project / 'agent.py'}:build_agent"
    registry = UserCodeRegistry(project=project, agents={"calc": target})
    llm = ScriptedLLM([action("add", json.dumps({"a": 1, "b": 2})), answer("3")])
    dumped = AgentSpec.from_registry(registry, agent="calc", **spec).model_dump()
    runner = AgentRunner(registry.build_agent("calc", llm=llm), spec=dumped)
    task_id = runner.create_task("What is 1 + 2?").task_id
    runner.run_until(task_id)
    runner.finalize_response(task_id)
    return save_case(case_from_task(runner, task_id, name="adds"), project / "stepwise_cases")


def test_live_model_runs_the_cases_on_that_model_and_reports_a_pass_rate(
    project: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(project)  # The case's agent is on the demo model: only --model reaches the server.
    with OpenAIServer(policy=react_policy) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        code = main(["test", "--live", "--model", "openai:whatever", "--repeat", "3"])
        models = {request.json["model"] for request in server.model_requests}
        assert len(server.model_requests) == 3 * 2  # Act, then answer, in each run.
    out = capsys.readouterr().out
    assert code == 0, out
    assert models == {"whatever"}
    assert "Pass rates on openai:whatever:" in out
    assert "adds: 100% of 3 runs" in out


def test_a_flaky_model_gives_a_partial_rate_judged_by_min_pass_rate(
    project: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(project)
    answers = iter(["Answer: 3", "Answer: 4", "Answer: 3"])

    def flaky(body: dict[str, Any]) -> Reply:
        reply = react_policy(body)  # Acts as recorded, then answers right 2 times in 3.
        return Reply(text=f"Thought: done.\n{next(answers)}") if "Answer" in reply.text else reply

    with OpenAIServer(policy=flaky) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        args = ["test", "--live", "--model", "openai:whatever", "--repeat", "3"]
        assert main([*args, "--min-pass-rate", "0.6"]) == 0
    out = capsys.readouterr().out
    assert "adds: 67% of 3 runs" in out


def test_the_case_base_url_gives_way_to_the_named_model_server(
    project: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Recorded against a server now gone: --model must not send the new model there.
    record(project, provider="openai", base_url="http://127.0.0.1:9/v1")
    with OpenAIServer(policy=react_policy) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert main(["test", "--live", "--model", "openai:other"]) == 0
        assert server.model_requests
    capsys.readouterr()


def test_model_without_live_or_of_an_unknown_provider_is_bad_input(project: Path, capsys) -> None:
    record(project)
    assert main(["test", "--model", "openai:whatever"]) == 2
    assert "--model needs --live" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["test", "--live", "--model", "nosuch:model"])
    assert exited.value.code == 2
    assert "unknown provider 'nosuch'" in capsys.readouterr().err
