"""A lone surrogate ("\\ud800": JSON lets it through, UTF-8 cannot encode it) in any text a
person gives is a typed error at the edge, in the Python API and over HTTP (issue 23, item 3).

It used to fail deep inside (`UnicodeEncodeError` from the store, `PydanticSerializationError`),
untyped, and over HTTP a 500 that also reset the client's keep-alive connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from agent_core import AgentRunner
from agent_core.errors import InvalidTextError
from agent_core.llms import ChatMessage, ScriptedLLM
from agent_core.store import SQLiteStore
from agent_core.workers import ReActAgentWorker
from tests.stepwise.server.conftest import serve, settings  # noqa: F401 - fixtures

LONE = "half a pair: \ud800 here"


@pytest.fixture
def runner(tmp_path) -> AgentRunner:
    llm = ScriptedLLM(["Thought: easy.\nAnswer: 3"] * 3)
    return AgentRunner(
        ReActAgentWorker.from_tools([], llm=llm), store=SQLiteStore(tmp_path / "s.db")
    )


def _upcoming(runner: AgentRunner, task_id: str) -> str:
    return runner.get_upcoming_steps(task_id)[0].step_id


ENTRIES: dict[str, Callable[[AgentRunner, str], Any]] = {
    "create_task": lambda r, _: r.create_task(LONE),
    "run_step(input=)": lambda r, t: r.run_step(t, input=LONE),
    "run_step(input={...})": lambda r, t: r.run_step(t, input={"note": [LONE]}),
    "edit_step": lambda r, t: r.edit_step(t, _upcoming(r, t), LONE),
    "add_feedback": lambda r, t: r.add_feedback(t, LONE),
    "edit_conversation": lambda r, t: r.edit_conversation(
        t, [*r.get_task(t).memory.get_all(), ChatMessage(role="user", content=LONE)]
    ),
}


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_the_python_api_refuses_it_typed_and_keeps_the_task(runner, entry) -> None:
    task_id = runner.create_task("What is 1 + 2?").task_id
    version = runner.store.task_version(task_id)

    with pytest.raises(InvalidTextError) as refused:
        ENTRIES[entry](runner, task_id)

    assert refused.value.code == "invalid_text"
    assert isinstance(refused.value.params["position"], int)
    assert runner.store.task_version(task_id) == version  # Nothing already done is lost.
    assert runner.run_step(task_id).is_last  # And the task goes on.


def test_a_surrogate_pair_is_a_character_and_passes(runner) -> None:
    task = runner.create_task("an emoji: \U0001f999")
    assert task.input.endswith("\U0001f999")


def test_over_http_it_is_a_422_and_the_connection_stays_up(serve) -> None:  # noqa: F811
    body = '{"input": "half a pair: \\ud800 here"}'  # As a client's JSON encoder escapes it.
    with httpx.Client(base_url=serve(), timeout=30) as client:
        refused = client.post(
            "/ap/v1/agent/tasks", content=body, headers={"content-type": "application/json"}
        )
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["code"] == "invalid_text"
        created = client.post("/ap/v1/agent/tasks", json={"input": "What is 1 + 2?"})
        assert created.status_code == 200
        task_id = created.json()["task_id"]
        feedback = client.post(
            f"/stepwise/v1/tasks/{task_id}/feedback",
            content='{"text": "\\udfff"}',
            headers={"content-type": "application/json"},
        )
        # Refused a layer earlier here: pydantic cannot read the body's text as a str.
        assert feedback.status_code == 422, feedback.text
        assert feedback.json()["error"]["code"] in ("invalid_text", "invalid_request")
