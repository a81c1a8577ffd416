"""Replay: a saved case runs on the current code, with the model answered from the recording.

Each test records a task of a user's agent (a factory in a project file of the test's own),
saves it as a case, changes or keeps the code, and replays it: offline, with no model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.recordings import Case, case_from_task, load_case, replay_case, save_case
from agent_core.spec import AgentSpec
from agent_core.types import StepKind, StepStatus
from agent_core.user_code import UserCodeRegistry
from agent_core.workers import ReActAgentWorker
from tests.agent_core._user_projects import isolated_imports  # noqa: F401 - a fixture
from tests.agent_core.conftest import action, answer
from tests.agent_core.recordings._projects import change_agent, write_agent
from tests.llm_servers import OpenAIServer, react_policy

pytestmark = pytest.mark.usefixtures("isolated_imports")


def record_on_loopback(project: Path, target: str) -> Case:
    """Run the user's agent on the loopback OpenAI server; the case of its task."""
    registry = UserCodeRegistry(project=project, agents={"calc": target})
    with OpenAIServer(policy=react_policy) as server:
        spec = AgentSpec.from_registry(
            registry, agent="calc", provider="openai", base_url=server.url + "/v1"
        )
        runner = spec.build_runner(registry=registry)
        task_id = runner.create_task("What is 1 + 2?").task_id
        runner.run_until(task_id)
        runner.finalize_response(task_id)
        assert len(server.model_requests) == 2
    return case_from_task(runner, task_id, name="adds")


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test-key-0123456789")


def test_a_case_from_the_loopback_server_replays_with_the_server_stopped(
    tmp_path: Path, keyed: None
) -> None:
    target = write_agent(tmp_path)
    path = save_case(record_on_loopback(tmp_path, target), tmp_path / "cases")
    # The server is stopped: a model call would fail the step (and the root conftest's guard).
    result = replay_case(load_case(path), project=tmp_path)
    assert result.passed, result.report()
    assert result.steps == 2 and result.divergence is None
    assert [r.name for r in result.expectations] == ["answer", "tool calls", "no failed step"]
    assert result.runner is not None
    assert result.runner.finalize_response(result.task_id).response == "3"


def test_a_changed_tool_diverges_at_its_step_with_the_diff(tmp_path: Path, keyed: None) -> None:
    target = write_agent(tmp_path)
    case = record_on_loopback(tmp_path, target)
    change_agent(tmp_path, "return a + b", "return a + b + 1")
    result = replay_case(case, project=tmp_path)
    assert not result.passed
    divergence = result.divergence
    assert divergence is not None
    assert (divergence.step, divergence.step_kind, divergence.kind) == (1, "llm", "tool_result")
    assert "-3\n+4" in divergence.diff
    assert result.steps == 1  # It stopped there.


def test_a_changed_prompt_diverges_with_a_diff_of_the_requests(tmp_path: Path, keyed: None) -> None:
    target = write_agent(tmp_path)
    case = record_on_loopback(tmp_path, target)
    change_agent(tmp_path, "INSTRUCTIONS = ''", "INSTRUCTIONS = 'You add carefully.'")
    result = replay_case(case, project=tmp_path)
    divergence = result.divergence
    assert divergence is not None
    assert (divergence.step, divergence.kind) == (1, "request")
    assert "+    You add carefully." in divergence.diff
    assert divergence.diff.startswith("--- recorded request (step 1)\n+++ replayed request")
    # The system prompt alone changed: ignoring it, the case passes.
    assert replay_case(case, project=tmp_path, ignore_system_prompt=True).passed


def test_tools_that_touch_the_outside_are_answered_from_the_recording(tmp_path: Path) -> None:
    target = write_agent(tmp_path)
    registry = UserCodeRegistry(project=tmp_path, agents={"calc": target})
    llm = ScriptedLLM([action("send_mail", '{"to": "ann"}'), answer("sent")])
    spec = AgentSpec.from_registry(registry, agent="calc")
    worker = registry.build_agent("calc", llm=llm, target=target)
    runner = AgentRunner(worker, spec=spec.model_dump(mode="json"))
    task_id = runner.create_task("Mail Ann").task_id
    runner.run_until(task_id)
    case = case_from_task(runner, task_id, name="mail")
    change_agent(tmp_path, 'return f"sent to {to}"', 'return f"SENT AGAIN to {to}"')

    assert replay_case(case, project=tmp_path).passed  # auto: send_mail has side effects.
    live = replay_case(case, project=tmp_path, tools="live")
    assert live.divergence is not None and live.divergence.kind == "tool_result"
    assert "+SENT AGAIN to ann" in live.divergence.diff


def test_edits_rejections_and_feedback_are_replayed_where_they_happened(tmp_path: Path) -> None:
    target = write_agent(tmp_path, approval=True)
    registry = UserCodeRegistry(project=tmp_path, agents={"calc": target})
    llm = ScriptedLLM(
        [action("add", '{"a": 1, "b": 2}'), action("multiply", '{"a": 4, "b": 10}'), answer("4")]
    )
    runner = AgentRunner(registry.build_agent("calc", llm=llm, target=target))  # No spec.
    task_id = runner.create_task("Add 2 and 2").task_id
    runner.run_step(task_id)  # The model proposes add(1, 2)...
    runner.run_step(task_id, input={"tool": "add", "args": {"a": 2, "b": 2}})  # ...a person fixes.
    runner.run_step(task_id)  # The model proposes multiply...
    runner.reject_step(task_id, message="no multiplying")  # ...a person refuses.
    runner.add_feedback(task_id, "Just answer.")
    runner.run_step(task_id)
    assert llm.exhausted
    case = case_from_task(runner, task_id, name="steered")
    assert [[a.act for a in s.human] for s in case.steps] == [
        [],
        ["edited_call"],
        [],
        ["rejected_call"],
        ["feedback"],
        [],
    ]

    # The case names no agent (the runner had no spec): the override gives it.
    result = replay_case(case, project=tmp_path, agent=("calc", target))
    assert result.passed, result.report()
    assert result.runner is not None
    steps = result.runner.get_steps(result.task_id)
    assert all(s.status is StepStatus.COMPLETED for s in steps)
    edited = next(s for s in steps if s.edited)
    assert edited.proposed_input == {"tool": "add", "args": {"a": 1, "b": 2}}
    assert next(s for s in steps if s.rejection).rejection == "no multiplying"
    assert any(s.kind is StepKind.HUMAN and s.input == "Just answer." for s in steps)


def test_without_an_agent_the_replay_says_to_give_one(tmp_path: Path) -> None:
    llm = ScriptedLLM([answer("hi")])
    runner = AgentRunner(ReActAgentWorker([], llm))
    task_id = runner.create_task("hello").task_id
    runner.run_until(task_id)
    result = replay_case(case_from_task(runner, task_id), project=tmp_path)
    assert result.error is not None and result.error.code == "replay_unsupported"
    assert "--agent NAME=TARGET" in str(result.error)
    assert not result.passed


def test_a_python_check_fails_the_case_with_its_words(tmp_path: Path, keyed: None) -> None:
    target = write_agent(tmp_path)
    case = record_on_loopback(tmp_path, target)
    (tmp_path / "checks.py").write_text(
        "def short(outcome):\n"
        "    return True if len(outcome.steps) < 2 else f'{len(outcome.steps)} steps'\n"
    )
    case.expectations.check = "checks.py:short"
    result = replay_case(case, project=tmp_path)
    assert not result.passed and result.divergence is None
    assert [(r.name, r.detail) for r in result.failed_expectations] == [
        ("check checks.py:short", "2 steps")
    ]


PYDANTIC_AI_AGENT = """
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel


def reply(messages, info):
    return ModelResponse(parts=[TextPart("hello")])


agent = Agent(FunctionModel(reply))
"""


def test_a_framework_agent_with_its_own_model_is_refused_with_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pydantic_ai")
    from agent_core.recordings import agents

    # pydantic-ai replays at its model client now (test_replay_frameworks.py); a framework
    # without client-level replay is still refused with what to do.
    monkeypatch.delitem(agents.CLIENT_LEVEL_REPLAY, "pydantic-ai")
    (tmp_path / "pai.py").write_text(PYDANTIC_AI_AGENT)
    target = f"{tmp_path / 'pai.py'}:agent"
    registry = UserCodeRegistry(project=tmp_path, agents={"pai": target})
    spec = AgentSpec.from_registry(registry, agent="pai")
    runner = spec.build_runner(registry=registry)
    task_id = runner.create_task("hi").task_id
    runner.run_until(task_id)
    case = case_from_task(runner, task_id, name="pai")
    assert case.answer == "hello" and case.steps[0].request is not None

    result = replay_case(case, project=tmp_path)
    assert result.error is not None and result.error.code == "replay_unsupported"
    assert result.error.params["framework"] == "pydantic-ai"
    assert "--live" in str(result.error)


def test_a_replay_leaves_no_workspace_behind(tmp_path: Path, keyed: None, monkeypatch) -> None:
    import tempfile

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # Where replays make their folders.
    case = record_on_loopback(tmp_path, write_agent(tmp_path))
    made = []
    real_mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(
        tempfile, "mkdtemp", lambda **kw: made.append(real_mkdtemp(**kw)) or made[-1]
    )
    assert replay_case(case, project=tmp_path).passed
    assert made and all("stepwise-replay-" in folder for folder in made)  # It made one ...
    assert list(scratch.iterdir()) == []  # ... and removed it.


def test_a_call_held_by_a_tool_breakpoint_replays_as_its_own_step(
    tmp_path: Path, keyed: None
) -> None:
    from agent_core.runtime.breakpoints import OnTool

    registry = UserCodeRegistry(project=tmp_path, agents={"calc": write_agent(tmp_path)})
    with OpenAIServer(policy=react_policy) as server:
        spec = AgentSpec.from_registry(
            registry, agent="calc", provider="openai", base_url=server.url + "/v1"
        )
        runner = spec.build_runner(registry=registry)
        task_id = runner.create_task("What is 1 + 2?").task_id
        held = runner.run_until(task_id, stop=[OnTool()])
        assert held.reason == "breakpoint"  # The call waits as its own tool step ...
        runner.run_until(task_id)  # ... and runs when the person goes on.
        runner.finalize_response(task_id)
    case = case_from_task(runner, task_id, name="held")
    assert [s.kind for s in case.steps] == ["llm", "tool", "llm"]

    result = replay_case(case, project=tmp_path)
    assert result.passed, result.report()
    assert result.steps == 3
