"""Errors as data: every runtime error carries a stable code and its facts as JSON.

The faces word errors from `code` and `params` (the app) or answer with them (HTTP), so each
raise site a person fixes differently must keep its code, and each code must be listed.
"""

from __future__ import annotations

import ast
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agent_core
from agent_core import errors
from agent_core.errors import (
    ERROR_CODES,
    AgentCoreError,
    ConflictError,
    LLMStatusError,
    MissingKeyError,
    NotReadyError,
    StepError,
    ToolError,
    UserCodeError,
)
from agent_core.execute import ContextTooLongError, ConversationError
from agent_core.llms import ScriptedLLM
from agent_core.llms.scripted import HumanLLM
from agent_core.runtime.runner import AgentRunner
from agent_core.spec import AgentSpec
from agent_core.store.base import TaskChange
from agent_core.tools.arithmetic import arithmetic_tools
from agent_core.workers import ReActAgentWorker

ADD = 'Thought: I add.\nAction: add\nAction Input: {"a": 1, "b": 2}'
ANSWER = "Thought: easy.\nAnswer: 3"


def error_of(call: Callable[[], Any]) -> AgentCoreError:
    try:
        call()
    except AgentCoreError as exc:
        return exc
    raise AssertionError("no error")


def runner(replies: list[str], **worker: Any) -> AgentRunner:
    worker.setdefault("tool_approval", True)
    return AgentRunner(ReActAgentWorker(arithmetic_tools(), ScriptedLLM(replies), **worker))


def finished() -> tuple[AgentRunner, str]:
    agent = runner([ANSWER])
    task_id = agent.create_task("add").task_id
    agent.run_step(task_id)
    return agent, task_id


# ----------------------------------------------------------------------------- the list


def _error_classes() -> list[type[AgentCoreError]]:
    found = [
        value
        for value in vars(errors).values()
        if inspect.isclass(value) and issubclass(value, AgentCoreError)
    ]
    return [*found, ConversationError, ContextTooLongError]


@pytest.mark.parametrize("cls", _error_classes(), ids=lambda cls: cls.__name__)
def test_every_error_class_has_a_listed_code(cls: type[AgentCoreError]) -> None:
    assert cls.default_code in ERROR_CODES
    assert cls().code == cls.default_code


def _codes_given_in(path: Path) -> set[str]:
    """Every string a call passes as `code=` in the module at `path`."""
    codes = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.keyword) and node.arg == "code":
            codes |= {
                part.value
                for part in ast.walk(node.value)
                if isinstance(part, ast.Constant) and isinstance(part.value, str)
            }
    return codes


def test_every_code_a_raise_site_gives_is_listed() -> None:
    root = Path(agent_core.__file__).parent
    given = {code for path in root.rglob("*.py") for code in _codes_given_in(path)}
    assert {"max_iterations", "task_finished", "task_changed"} <= given  # the scan sees them
    assert given <= set(ERROR_CODES), given - set(ERROR_CODES)


def test_the_classes_codes_are_the_ones_the_http_faces_answered_with() -> None:
    # These strings were the HTTP API's codes before errors carried one: clients match them.
    assert {cls.__name__: cls.default_code for cls in _error_classes()}.items() >= {
        "TaskNotFoundError": "task_not_found",
        "StepNotFoundError": "step_not_found",
        "ConflictError": "conflict",
        "StepConflictError": "conflict",
        "NotReadyError": "step_not_ready",
        "NothingToRunError": "nothing_to_run",
        "TaskNotActiveError": "task_not_active",
        "InputTooLargeError": "input_too_large",
        "MissingKeyError": "model_not_configured",
        "StepError": "step_failed",
        "LLMError": "model_error",
        "ToolError": "tool_error",
        "UserCodeError": "user_code_error",
        "StoreError": "store_error",
        "UserError": "bad_request",
        "ConversationError": "invalid_conversation",
        "ContextTooLongError": "context_too_long",
    }.items()


# ----------------------------------------------------------------------------- fields


def test_the_facts_a_subclass_takes_are_params_too() -> None:
    assert NotReadyError("x", waiting_on=["a"]).params == {"waiting_on": ["a"]}
    assert ToolError("x", tool_name="add").params == {"tool": "add"}
    assert UserCodeError("x", target="a.py:b").params == {"target": "a.py:b"}
    status = LLMStatusError("x", status=429, request_id="req_1", retry_after=2.0)
    assert status.params == {"status": 429, "request_id": "req_1", "retry_after": 2.0}
    # A param given outright wins over the keyword's copy.
    assert ToolError("x", tool_name="add", params={"tool": "sum"}).params == {"tool": "sum"}


def test_an_error_as_data_is_json_and_holds_what_a_face_needs() -> None:
    error = ConflictError("busy", hint="wait", remedy="wait", task_id="t", code="step_running")
    data = json.loads(json.dumps(error.to_data()))
    assert data == {
        "code": "step_running",
        "message": "busy",
        "hint": "wait",
        "remedy": "wait",
        "task_id": "t",
        "step_id": "",
        "params": {},
    }
    assert StepError("failed", cause="the tool broke").to_data()["params"] == {
        "cause_message": "the tool broke"
    }


# ----------------------------------------------------------------------------- raise sites


def test_finished_tasks_say_where_they_finished() -> None:
    agent, task_id = finished()
    ran_past = error_of(lambda: agent.run_step(task_id))
    assert (ran_past.code, ran_past.params) == ("task_finished", {"finished_at": 1})
    feedback = error_of(lambda: agent.add_feedback(task_id, "more"))
    assert (feedback.code, feedback.params) == ("feedback_after_finish", {"finished_at": 1})
    undo = error_of(lambda: agent.undo_step(task_id, steps=3))
    assert (undo.code, undo.params) == ("nothing_to_undo", {"completed": 1, "requested": 3})
    agent.finalize_response(task_id)
    closed = error_of(lambda: agent.run_step(task_id))
    assert (closed.code, closed.params) == (
        "task_not_active",
        {"status": "completed", "action": "run"},
    )


def test_a_task_that_is_not_finished_cannot_be_finalized() -> None:
    agent = runner([ADD])
    task_id = agent.create_task("add").task_id
    assert error_of(lambda: agent.get_task_output(task_id)).code == "no_completed_step"
    early = error_of(lambda: agent.finalize_response(task_id))
    assert (early.code, early.params) == ("task_not_finished", {"upcoming": 1})
    done = agent.run_step(task_id).task_step.step_id
    again = error_of(lambda: agent.run_step(task_id, step_id=done))
    assert (again.code, again.params) == (
        "step_not_runnable",
        {"status": "completed", "action": "run"},
    )


def test_a_too_large_input_gives_its_size_and_the_limit() -> None:
    agent = AgentRunner(ReActAgentWorker([], ScriptedLLM([])), max_input_chars=10)
    task_id = agent.create_task("short").task_id
    error = error_of(lambda: agent.add_feedback(task_id, "x" * 50))
    assert (error.code, error.params) == (
        "input_too_large",
        {"what": "the feedback", "size": 50, "limit": 10},
    )


def test_a_stale_commit_is_a_changed_task() -> None:
    agent = runner([ADD])
    state = agent.get_task_state(agent.create_task("add").task_id)
    error = error_of(lambda: agent.store.commit(TaskChange(state=state, base_version=7)))
    assert isinstance(error, ConflictError)
    assert (error.code, error.task_id) == ("task_changed", state.task_id)
    assert error.params == {"version": state.version, "expected": 7}


@pytest.mark.parametrize(
    ("provider", "env"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")]
)
def test_a_missing_key_names_its_provider_and_variable(
    provider: str, env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(env, raising=False)
    error = error_of(lambda: AgentSpec(provider=provider).build_runner())  # type: ignore[arg-type]
    assert isinstance(error, MissingKeyError)
    assert (error.code, error.params) == (
        "model_not_configured",
        {"provider": provider, "key_env": env},
    )


# ----------------------------------------------------------------------------- failed steps


def test_a_failed_step_keeps_its_class_code_and_says_why_in_params() -> None:
    agent = runner([ADD, ADD], tool_approval=False, max_iterations=1)
    task_id = agent.create_task("add").task_id
    agent.run_step(task_id)
    error = error_of(lambda: agent.run_step(task_id))
    assert isinstance(error, StepError) and error.code == "step_failed"  # as HTTP answered
    assert error.params["cause_code"] == "max_iterations"
    assert error.params["cause_params"] == {"limit": 1}
    assert error.params["cause_message"].startswith("the agent reached max_iterations=1")
    (step,) = agent.get_task_state(task_id).step_queue
    assert (step.error_code, step.error_params) == ("max_iterations", {"limit": 1})


def test_a_model_that_is_a_person_without_a_reply_says_so() -> None:
    agent = AgentRunner(ReActAgentWorker(arithmetic_tools(), HumanLLM()))
    task_id = agent.create_task("add").task_id
    error = error_of(lambda: agent.run_step(task_id))
    assert error.params["cause_code"] == "human_reply_needed"


def test_a_script_that_ran_out_says_how_many_replies_it_had() -> None:
    agent = runner([ADD])
    task_id = agent.create_task("add").task_id
    agent.run_step(task_id)
    agent.run_step(task_id)  # the add call
    error = error_of(lambda: agent.run_step(task_id))
    assert (error.params["cause_code"], error.params["cause_params"]) == (
        "script_exhausted",
        {"replies": 1},
    )


def test_a_step_that_ran_again_forgets_the_code_of_its_last_failure() -> None:
    agent = runner([], tool_approval=False)
    task_id = agent.create_task("add").task_id
    error_of(lambda: agent.run_step(task_id))
    assert agent.get_task_state(task_id).step_queue[0].error_code == "script_exhausted"
    agent.agent_worker.llm.add_replies(ANSWER)  # type: ignore[attr-defined]
    step = agent.run_step(task_id).task_step
    assert (step.error, step.error_code, step.error_params) == (None, None, {})


def test_run_until_gives_the_error_that_stopped_it_as_data() -> None:
    agent = runner([ADD], tool_approval=False)
    task_id = agent.create_task("add").task_id
    result = agent.run_until(task_id)
    assert result.reason == "error" and result.error is not None
    assert result.error["code"] == "step_failed"
    assert result.error["params"]["cause_code"] == "script_exhausted"
    assert result.error["step_id"] and result.error["task_id"] == task_id
