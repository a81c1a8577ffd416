"""Save as test on an imported task (issue 30): its case carries each recorded model request.

The case of a task imported from a trace is the recording a replay answers from: each model
step holds the messages the model was sent (as the trace recorded them) and its reply, each
tool step its call and result, and the case survives its file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_core.recordings import case_from_task, load_case, save_case
from agent_core.recordings.importers import import_file
from agent_core.store.memory import InMemoryStore
from tests.agent_core.recordings.importers._traces import otlp_json, pydantic_ai_trace
from tests.agent_core.recordings.importers.test_langfuse_langsmith import (
    langfuse_trace,
    langsmith_run,
)

TRACES = {
    "pydantic-ai": lambda: otlp_json(pydantic_ai_trace()),
    "langfuse": langfuse_trace,
    "langsmith": langsmith_run,
}


def _import(store: InMemoryStore, document: Any) -> str:
    [task_id] = import_file(json.dumps(document).encode(), store)
    return task_id


@pytest.mark.parametrize("source", sorted(TRACES))
def test_the_case_of_an_imported_task_carries_each_recorded_request(
    source: str, tmp_path: Path
) -> None:
    store = InMemoryStore()
    task_id = _import(store, TRACES[source]())
    state = store.load_task(task_id)
    assert state is not None

    case = load_case(save_case(case_from_task(store, task_id), tmp_path))

    assert case.input == state.task.input and len(case.steps) == len(state.completed)
    for step, step_id in zip(case.steps, state.completed, strict=True):
        output = state.outputs[step_id]
        assert step.kind == output.task_step.kind.value
        if step.kind == "llm":
            sent = store.load_messages_sent(task_id, step_id)
            assert step.request is not None and sent
            got = [(m.role, m.content) for m in step.request.messages]
            assert got == [(m.role, m.content) for m in sent]
            assert step.reply is not None
        else:
            assert step.request is None
            assert [(c.tool, c.args) for c in step.tool_calls] == [
                (c.tool_name, c.args) for c in output.tool_calls
            ]
    kinds = [s.kind for s in case.steps]
    assert kinds == ["llm", "tool", "llm"] and case.steps[-1].is_last
    tool_asked = case.steps[0].reply.message.tool_calls  # type: ignore[union-attr]
    assert [c.name for c in tool_asked] == ["multiply"]
    assert case.answer and "42" in case.answer
