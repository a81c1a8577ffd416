"""A pydantic-ai case keeps the tools each request offered, and its replay compares them.

The adapter keeps the function tools pydantic-ai sent (names and schemas) in the step's state;
`case_from_task` reads them into the step's `ModelRequest.tools`, and a replay whose agent now
offers other tools (a changed signature) diverges at the first request with the schema diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_core.recordings import replay_case
from agent_core.recordings.requests import request_tools
from agent_core.types import REQUEST_TOOLS_KEY, TaskStep
from tests.agent_core._user_projects import isolated_imports  # noqa: F401 - a fixture
from tests.agent_core.recordings._projects import change_agent
from tests.agent_core.recordings.test_replay_frameworks import (
    PYDANTIC_AI_FUNCTION,
    PYDANTIC_AI_OPENAI,
    _saved,
)

pytestmark = pytest.mark.usefixtures("isolated_imports")

PYDANTIC_AI = [
    pytest.param(PYDANTIC_AI_OPENAI, True, id="openai-client"),
    pytest.param(PYDANTIC_AI_FUNCTION, False, id="function-model"),
]


@pytest.mark.parametrize(("text", "served"), PYDANTIC_AI)
def test_the_case_records_the_tools_each_request_offered(
    tmp_path: Path, text: str, served: bool
) -> None:
    case = _saved(tmp_path, text, "agent.py:agent", served=served)
    requests = [s.request for s in case.steps if s.request is not None]
    assert requests
    for request in requests:
        assert request.tools is not None
        (add,) = request.tools
        assert add.name == "add" and add.description == "Add two integers."
        assert set(add.parameters["properties"]) == {"a", "b"}
    assert replay_case(case, project=tmp_path).passed  # Same tools: no divergence.


@pytest.mark.parametrize(("text", "served"), PYDANTIC_AI)
def test_a_changed_tool_schema_diverges_at_the_first_request(
    tmp_path: Path, text: str, served: bool
) -> None:
    case = _saved(tmp_path, text, "agent.py:agent", served=served)
    change_agent(tmp_path, "def add(a: int, b: int)", "def add(a: int, b: int, c: int = 0)")
    result = replay_case(case, project=tmp_path)
    divergence = result.divergence
    assert divergence is not None, result.report()
    assert (divergence.step, divergence.kind) == (1, "request")
    assert "tool " in divergence.diff and '"c"' in divergence.diff


def test_a_step_without_kept_tools_compares_none() -> None:
    step = TaskStep(task_id="t")
    assert request_tools(step) is None  # Not recorded: not "no tools".
    step.step_state[REQUEST_TOOLS_KEY] = []
    assert request_tools(step) == []
