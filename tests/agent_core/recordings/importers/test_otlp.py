"""OTLP JSON from the real instrumentations, imported as tasks and forked with an agent."""

from __future__ import annotations

import json

import pytest

from agent_core.errors import UserError
from agent_core.recordings.importers import detect, import_file
from agent_core.store.memory import InMemoryStore
from agent_core.types import StepKind, TaskState, TaskStatus
from tests.agent_core.recordings.importers._traces import (
    openinference_trace,
    otlp_json,
    otlp_lines,
    pydantic_ai_trace,
)
from tests.llm_servers import OpenAIServer


def _steps(state: TaskState) -> list[tuple[StepKind, object]]:
    return [(state.steps[s].kind, state.steps[s].input) for s in state.completed]


def _only_task(store: InMemoryStore, data: bytes, **kwargs: object) -> TaskState:
    [task_id] = import_file(data, store, **kwargs)  # type: ignore[arg-type]
    state = store.load_task(task_id)
    assert state is not None
    return state


def test_a_pydantic_ai_run_is_a_read_only_task_with_its_model_and_tool_steps(
    store: InMemoryStore,
) -> None:
    data = json.dumps(otlp_json(pydantic_ai_trace())).encode()
    assert detect(data) == "otlp"
    state = _only_task(store, data, name="run.json")
    assert state.task.input == "What is 6 times 7?"
    assert state.task.imported and state.task.status is TaskStatus.COMPLETED
    assert state.task.imported_from is not None
    assert state.task.imported_from.format == "otlp"
    assert state.task.imported_from.file == "run.json"
    assert state.task.imported_from.framework == "pydantic-ai"
    assert _steps(state) == [
        (StepKind.LLM, "What is 6 times 7?"),
        (StepKind.TOOL, {"tool": "multiply", "args": {"a": 6, "b": 7}}),
        (StepKind.LLM, None),
    ]
    first, tool, last = (state.outputs[s] for s in state.completed)
    sent = store.load_messages_sent(state.task_id, first.task_step.step_id)
    assert [(m.role, m.content) for m in sent] == [
        ("system", "Use the tools."),
        ("user", "What is 6 times 7?"),
    ]
    assert first.usage.prompt_tokens > 0 and first.task_step.name == "chat function:model:"
    assert tool.tool_calls[0].content == "42" and tool.tool_calls[0].call_id == "call-1"
    assert last.output == "The answer is 42." and last.is_last
    later = store.load_messages_sent(state.task_id, last.task_step.step_id)
    assert [m.role for m in later] == ["system", "user", "assistant", "tool"]
    assert later[2].tool_calls[0].name == "multiply"
    with pytest.raises(UserError) as refused:  # Read only, like any imported task.
        from agent_core.runtime.queue import check_active

        check_active(state, "run")
    assert refused.value.code == "task_not_active"


def test_the_collectors_json_lines_read_as_one_trace(store: InMemoryStore) -> None:
    state = _only_task(store, otlp_lines(pydantic_ai_trace()))
    assert [kind for kind, _ in _steps(state)] == [StepKind.LLM, StepKind.TOOL, StepKind.LLM]


def test_an_openinference_trace_of_the_openai_sdk_reads_its_messages_and_tool(
    store: InMemoryStore, model_server: OpenAIServer
) -> None:
    data = json.dumps(otlp_json(openinference_trace(model_server.url + "/v1"))).encode()
    state = _only_task(store, data, format="openinference")
    assert state.task.imported_from is not None
    assert state.task.imported_from.format == "openinference"
    assert state.task.input == "What is 6 times 7?"
    assert _steps(state) == [
        (StepKind.LLM, "What is 6 times 7?"),
        (StepKind.TOOL, {"tool": "multiply", "args": {"a": 6, "b": 7}}),
        (StepKind.LLM, None),
    ]
    first, _, last = (state.outputs[s] for s in state.completed)
    assert first.usage.prompt_tokens == 11 and first.usage.completion_tokens == 7
    sent = store.load_messages_sent(state.task_id, last.task_step.step_id)
    assert [m.role for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[2].tool_calls[0].args == {"a": 6, "b": 7}
    assert last.output == "The answer is 42."


def test_a_fork_at_step_2_with_an_agent_runs_live_to_its_answer(
    store: InMemoryStore, agent_on, model_server: OpenAIServer
) -> None:
    state = _only_task(store, json.dumps(otlp_json(pydantic_ai_trace())).encode())
    spec = agent_on(model_server)
    model_server.script("Six times seven is 42.")
    runner = spec.build_runner(store=store)
    fork = runner.fork_task(state.task_id, state.completed[1], agent=spec)
    assert not fork.imported and fork.forked_from is not None
    assert fork.spec == spec.model_dump(mode="json")
    out = runner.run_step(fork.task_id)
    assert out.is_last and out.output == "Six times seven is 42."
    [request] = model_server.model_requests
    roles = [m["role"] for m in request.json["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]  # The recorded conversation.
    assert runner.get_task_state(state.task_id).task.imported  # The original is untouched.


def test_a_fork_with_an_agent_that_lacks_a_recorded_tool_is_refused_first(
    store: InMemoryStore, agent_on, model_server: OpenAIServer
) -> None:
    state = _only_task(store, json.dumps(otlp_json(pydantic_ai_trace())).encode())
    spec = agent_on(model_server).model_copy(update={"tools": ("calculator",)})
    before = len(store.list_tasks())
    with pytest.raises(UserError) as refused:
        spec.build_runner(store=store).fork_task(state.task_id, state.completed[1], agent=spec)
    assert refused.value.code == "fork_tool_missing"
    assert refused.value.params["tools"] == ["multiply"]
    assert len(store.list_tasks()) == before


def test_a_fork_after_a_call_without_its_result_is_refused(
    store: InMemoryStore, agent_on, model_server: OpenAIServer
) -> None:
    state = _only_task(store, json.dumps(otlp_json(pydantic_ai_trace())).encode())
    spec = agent_on(model_server)
    with pytest.raises(UserError) as refused:
        spec.build_runner(store=store).fork_task(state.task_id, state.completed[0], agent=spec)
    assert refused.value.code == "fork_calls_unanswered"


def test_without_an_agent_an_imported_task_still_cannot_be_forked(
    store: InMemoryStore, agent_on, model_server: OpenAIServer
) -> None:
    state = _only_task(store, json.dumps(otlp_json(pydantic_ai_trace())).encode())
    runner = agent_on(model_server).build_runner(store=store)
    with pytest.raises(UserError) as refused:
        runner.fork_task(state.task_id, state.completed[1])
    assert refused.value.code == "fork_of_imported"
