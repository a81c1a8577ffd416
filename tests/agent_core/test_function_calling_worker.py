"""FunctionCallingAgentWorker: native tool calls fan out into tool steps and back in."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest

from agent_core import AgentRunner, ParallelAgentRunner, StepKind, StepStatus
from agent_core.dag import build_dag
from agent_core.errors import NotReadyError, StepError, UserError
from agent_core.events import (
    StepCompletedEvent,
    StepStartedEvent,
    TokenDeltaEvent,
    ToolCallFinishedEvent,
    ToolCallStartedEvent,
)
from agent_core.llms import ChatMessage, ChatResponse, FunctionLLM, ScriptedLLM, ToolCall
from agent_core.store import SQLiteStore
from agent_core.tools import FunctionTool
from agent_core.workers.function_calling import FunctionCallingAgentWorker

from .conftest import CALLS

QUESTION = "What is (121 * 3) + (1 + 2)?"


def calls(*items: tuple[str, str, dict[str, Any]], text: str = "") -> ChatResponse:
    """A reply that calls tools: (call id, tool name, args) each."""
    tool_calls = tuple(ToolCall(id=i, name=n, args=a) for i, n, a in items)
    return ChatResponse(message=ChatMessage(role="assistant", content=text, tool_calls=tool_calls))


MUL = ("c1", "multiply", {"a": 121, "b": 3})
ADD = ("c2", "add", {"a": 1, "b": 2})


def make(tools, replies, *, runner=AgentRunner, **worker_kwargs):
    llm = ScriptedLLM(replies)
    worker = FunctionCallingAgentWorker.from_tools(tools, llm=llm, **worker_kwargs)
    return runner(worker), llm


def tool_messages(request: list[ChatMessage]) -> dict[str, str]:
    return {m.tool_call_id or "": m.content for m in request if m.role == "tool"}


def test_a_single_call_runs_and_the_model_reads_its_result_under_its_call_id(tools):
    agent, llm = make(tools, [calls(MUL), "363"])
    task = agent.create_task("What is 121 * 3?")
    first = agent.run_step(task.task_id)
    assert not first.is_last and first.output == 'multiply({"a": 121, "b": 3})'
    (tool_step, waiting) = agent.get_upcoming_steps(task.task_id)
    assert tool_step.kind is StepKind.TOOL and not tool_step.needs_approval
    assert tool_step.input == {"tool": "multiply", "args": {"a": 121, "b": 3}, "call_id": "c1"}
    out = agent.run_step(task.task_id)
    assert out.output == "363" and out.tool_calls[0].call_id == "c1"
    assert agent.get_upcoming_steps(task.task_id) == [waiting]
    last = agent.run_step(task.task_id)
    assert last.is_last and last.output == "363" and llm.exhausted
    user, assistant, result = llm.requests[1]
    assert user.content == "What is 121 * 3?"
    assert assistant.tool_calls == (ToolCall(id="c1", name="multiply", args={"a": 121, "b": 3}),)
    assert (result.role, result.tool_call_id, result.name, result.content) == (
        "tool",
        "c1",
        "multiply",
        "363",
    )
    response = agent.finalize_response(task.task_id)
    assert response.response == "363" and [s.content for s in response.sources] == ["363"]
    assert [m.role for m in agent.memory.get_all()] == ["user", "assistant", "tool", "assistant"]


def test_the_model_is_told_every_tool_with_its_schema(tools):
    seen = []

    def reply(messages, specs):
        seen.append(specs)
        return "no tools needed"

    worker = FunctionCallingAgentWorker(tools, FunctionLLM(reply))
    assert str(AgentRunner(worker).chat("hi")) == "no tools needed"
    (specs,) = seen
    assert [s.name for s in specs] == ["multiply", "add"]
    assert specs[0].parameters["required"] == ["a", "b"]
    assert specs[0].parameters["properties"]["a"]["type"] == "integer"
    assert "Multiply two integers" in specs[0].description


def test_two_calls_in_one_reply_become_two_tool_steps_and_a_waiting_llm_step(tools):
    agent, _ = make(tools, [calls(MUL, ADD), "366"])
    task = agent.create_task(QUESTION)
    first = agent.run_step(task.task_id)
    mul, add, waiting = agent.get_upcoming_steps(task.task_id)
    assert [s.kind for s in (mul, add, waiting)] == [StepKind.TOOL, StepKind.TOOL, StepKind.LLM]
    assert [s.input["call_id"] for s in (mul, add)] == ["c1", "c2"]  # type: ignore[index]
    assert waiting.depends_on == [mul.step_id, add.step_id] and waiting.input is None
    assert first.task_step.next_step_ids == [mul.step_id, add.step_id, waiting.step_id]
    with pytest.raises(NotReadyError, match="waits for steps"):
        agent.run_step(task.task_id, step_id=waiting.step_id)
    graph = build_dag(agent.get_task_state(task.task_id))
    fan_out = {(first.task_step.step_id, mul.step_id), (first.task_step.step_id, add.step_id)}
    fan_in = {(mul.step_id, waiting.step_id), (add.step_id, waiting.step_id)}
    assert fan_out | fan_in <= set(graph.edges)


def test_sequential_runner_runs_the_calls_one_by_one_then_reasons(tools):
    agent, llm = make(tools, [calls(MUL, ADD), "366"])
    task = agent.create_task(QUESTION)
    result = agent.run_until(task.task_id)
    assert result.reason == "last_step"
    kinds = [o.task_step.kind for o in result.outputs]
    assert kinds == [StepKind.LLM, StepKind.TOOL, StepKind.TOOL, StepKind.LLM]
    assert CALLS == [("multiply", 121, 3), ("add", 1, 2)]
    assert tool_messages(llm.requests[-1]) == {"c1": "363", "c2": "3"}
    assert agent.finalize_response(task.task_id).response == "366"


async def nap_multiply(a: int, b: int) -> int:
    """Multiply slowly."""
    SPANS.append(("start", time.perf_counter()))
    await asyncio.sleep(0.2)
    SPANS.append(("end", time.perf_counter()))
    return a * b


async def nap_add(a: int, b: int) -> int:
    """Add slowly."""
    SPANS.append(("start", time.perf_counter()))
    await asyncio.sleep(0.2)
    SPANS.append(("end", time.perf_counter()))
    return a + b


SPANS: list[tuple[str, float]] = []


async def test_parallel_runner_runs_both_calls_at_once_and_reasons_after_both():
    SPANS.clear()
    slow = [
        FunctionTool.from_defaults(nap_multiply, name="multiply"),
        FunctionTool.from_defaults(nap_add, name="add"),
    ]
    llm = ScriptedLLM([calls(MUL, ADD), "366"])
    agent = ParallelAgentRunner(FunctionCallingAgentWorker(slow, llm))
    task = agent.create_task(QUESTION)
    await agent.arun_steps_in_queue(task.task_id)
    outputs = await agent.arun_steps_in_queue(task.task_id)
    assert sorted(o.output for o in outputs) == ["3", "363"]
    assert [kind for kind, _ in sorted(SPANS, key=lambda s: s[1])] == [
        "start",
        "start",
        "end",
        "end",
    ]
    (waiting,) = agent.get_upcoming_steps(task.task_id)
    assert waiting.kind is StepKind.LLM and len(llm.requests) == 1
    (last,) = await agent.arun_steps_in_queue(task.task_id)
    assert last.is_last and last.output == "366"
    roles = [m.role for m in llm.requests[-1]]
    assert roles == ["user", "assistant", "tool", "tool"]
    assert tool_messages(llm.requests[-1]) == {"c1": "363", "c2": "3"}


def test_with_approval_each_call_waits_and_run_until_stops_there(tools):
    agent, _ = make(tools, [calls(MUL, ADD), "366"], tool_approval=True)
    task = agent.create_task(QUESTION)
    result = agent.run_until(task.task_id)
    assert result.reason == "tool_approval" and len(result.outputs) == 1
    assert [s.needs_approval for s in agent.get_upcoming_steps(task.task_id)] == [
        True,
        True,
        False,
    ]
    assert CALLS == []


def test_edited_args_run_and_the_model_reads_that_a_person_changed_them(tools):
    agent, llm = make(tools, [calls(MUL, ADD), "363"], tool_approval=True)
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    mul, add, _ = agent.get_upcoming_steps(task.task_id)
    # The person's edit leaves out the call id; the model's id is kept.
    out = agent.run_step(
        task.task_id, step_id=mul.step_id, input={"tool": "multiply", "args": {"a": 120, "b": 3}}
    )
    assert CALLS == [("multiply", 120, 3)]
    assert out.output == '(The user changed this call to multiply with {"a": 120, "b": 3}.) 360'
    agent.run_step(task.task_id, step_id=add.step_id)
    agent.run_step(task.task_id)
    results = tool_messages(llm.requests[-1])
    assert results["c1"].startswith("(The user changed this call") and results["c2"] == "3"


def test_a_rejected_call_does_not_run_and_the_model_reads_why(tools):
    agent, llm = make(tools, [calls(MUL, ADD), "3"], tool_approval=True)
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    mul, add, _ = agent.get_upcoming_steps(task.task_id)
    rejected = agent.reject_step(task.task_id, mul.step_id, message="Too big; just add.")
    assert rejected.tool_calls[0].is_error
    agent.run_step(task.task_id, step_id=add.step_id)
    agent.run_step(task.task_id)
    assert CALLS == [("add", 1, 2)]
    assert tool_messages(llm.requests[-1]) == {
        "c1": "The user rejected the call of multiply: Too big; just add.",
        "c2": "3",
    }


def test_unknown_tools_and_bad_args_answer_the_model_with_errors(tools):
    agent, llm = make(
        tools, [calls(("c1", "divide", {"a": 1}), ("c2", "add", {"a": "x"})), "sorry"]
    )
    task = agent.create_task(QUESTION)
    result = agent.run_until(task.task_id)
    assert result.reason == "last_step" and CALLS == []
    results = tool_messages(llm.requests[-1])
    assert results["c1"] == "Error: there is no tool named 'divide'; the tools are: multiply, add."
    assert results["c2"].startswith("Error:") and "add" in results["c2"]
    assert all(o.tool_calls[0].is_error for o in result.outputs[1:3])


def test_a_malformed_edit_fails_the_tool_step_and_can_be_fixed(tools):
    agent, _ = make(tools, [calls(MUL)], tool_approval=True)
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    call = agent.get_upcoming_steps(task.task_id)[0]
    with pytest.raises(StepError, match=re.escape('must be a JSON object {"tool"')):
        agent.run_step(task.task_id, step_id=call.step_id, input="multiply 121 by 3")
    assert agent.get_step(task.task_id, call.step_id).status is StepStatus.FAILED
    fixed = '{"tool": "multiply", "args": {"a": 121, "b": 3}}'
    out = agent.run_step(task.task_id, step_id=call.step_id, input=fixed)
    assert out.tool_calls[0].call_id == "c1" and out.output.endswith("363")


def test_undoing_the_calling_step_removes_its_calls_and_the_waiting_step(tools):
    agent, llm = make(tools, [calls(MUL, ADD), calls(MUL), "363"])
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    assert len(agent.get_upcoming_steps(task.task_id)) == 3
    again = agent.undo_step(task.task_id)
    assert [s.step_id for s in agent.get_upcoming_steps(task.task_id)] == [again.step_id]
    assert again.kind is StepKind.LLM and agent.get_task(task.task_id).memory.get_all() == []
    agent.run_step(task.task_id)
    assert [s.kind for s in agent.get_upcoming_steps(task.task_id)] == [StepKind.TOOL, StepKind.LLM]
    assert agent.run_until(task.task_id).reason == "last_step"
    assert tool_messages(llm.requests[-1]) == {"c1": "363"}


def test_undoing_one_call_keeps_the_reasoning_step_waiting_for_its_rerun(tools):
    agent, llm = make(tools, [calls(MUL, ADD), "366"])
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    agent.run_step(task.task_id)  # multiply
    rerun = agent.undo_step(task.task_id)
    queued, add, waiting = agent.get_upcoming_steps(task.task_id)
    assert queued.step_id == rerun.step_id
    assert rerun.kind is StepKind.TOOL and rerun.input["call_id"] == "c1"  # type: ignore[index]
    assert waiting.depends_on == [rerun.step_id, add.step_id]
    assert agent.run_until(task.task_id).reason == "last_step"
    assert tool_messages(llm.requests[-1]) == {"c1": "363", "c2": "3"}


def test_feedback_given_while_calls_wait_goes_after_their_results(tools):
    agent, llm = make(tools, [calls(MUL, ADD), "366"], tool_approval=True)
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    agent.add_feedback(task.task_id, "Show your working.")
    for step in agent.get_upcoming_steps(task.task_id)[:2]:
        agent.run_step(task.task_id, step_id=step.step_id)
    agent.run_step(task.task_id)
    request = llm.requests[-1]
    assert [m.role for m in request] == ["user", "assistant", "tool", "tool", "user"]
    assert request[-1].content == "Show your working."
    # The stored memory keeps what happened, in order; only the request is regrouped.
    stored = [m.role for m in agent.get_task(task.task_id).memory.get_all()]
    assert stored == ["user", "assistant", "user", "tool", "tool", "assistant"]


def test_the_system_prompt_leads_the_request_and_the_preview(tools):
    agent, llm = make(tools, [calls(MUL), "363"], system_prompt="Be terse.")
    task = agent.create_task("What is 121 * 3?")
    agent.run_step(task.task_id)
    agent.run_step(task.task_id)
    preview = agent.preview_messages(task.task_id)
    assert [m.role for m in preview] == ["system", "user", "assistant", "tool"]
    agent.run_step(task.task_id)
    assert llm.requests[-1] == preview and llm.requests[0][0].content == "Be terse."


def test_max_iterations_fails_the_step_with_what_to_do(tools):
    agent, _ = make(tools, [calls(MUL), calls(MUL)], max_iterations=2)
    task = agent.create_task(QUESTION)
    result = agent.run_until(task.task_id)
    assert result.reason == "error" and "max_iterations=2" in (result.detail or "")
    assert "set_limits(task_id, max_iterations=...)" in (result.detail or "")
    assert len(result.outputs) == 4  # llm, tool, llm, tool; the third llm step failed


def test_stream_step_yields_token_deltas_then_tool_events(tools):
    agent, _ = make(tools, [calls(MUL, text="Let me multiply."), "363"])
    task = agent.create_task("What is 121 * 3?")
    events = list(agent.stream_step(task.task_id))
    deltas = "".join(e.delta for e in events if isinstance(e, TokenDeltaEvent))
    assert deltas == "Let me multiply."
    assert isinstance(events[-1], StepCompletedEvent)
    assert events[-1].output.thought == "Let me multiply."
    tool_events = list(agent.stream_step(task.task_id))
    assert [type(e) for e in tool_events] == [
        StepStartedEvent,
        ToolCallStartedEvent,
        ToolCallFinishedEvent,
        StepCompletedEvent,
    ]
    started, finished = tool_events[1], tool_events[2]
    assert isinstance(started, ToolCallStartedEvent) and started.args == {"a": 121, "b": 3}
    assert isinstance(finished, ToolCallFinishedEvent) and finished.output.content == "363"


def test_a_task_continues_after_a_restart_with_its_calls_intact(tools, tmp_path):
    db = tmp_path / "stepwise.db"
    worker = FunctionCallingAgentWorker(tools, ScriptedLLM([calls(MUL, ADD)]))
    task = AgentRunner(worker, store=SQLiteStore(db)).create_task(QUESTION)
    AgentRunner(worker, store=SQLiteStore(db)).run_step(task.task_id)
    llm = ScriptedLLM(["366"])
    reopened = AgentRunner(FunctionCallingAgentWorker(tools, llm), store=SQLiteStore(db))
    assert reopened.run_until(task.task_id).reason == "last_step"
    assert llm.requests[0][1].tool_calls[1] == ToolCall(id="c2", name="add", args={"a": 1, "b": 2})
    assert tool_messages(llm.requests[0]) == {"c1": "363", "c2": "3"}


def test_a_worker_without_an_llm_or_with_clashing_tool_names_is_refused(tools):
    with pytest.raises(UserError, match="needs llm="):
        FunctionCallingAgentWorker.from_tools(tools)
    with pytest.raises(UserError, match=r"repeated: \['add'\]"):
        FunctionCallingAgentWorker([*tools, tools[1]], ScriptedLLM([]))
