"""Tool approval (approve, edit, reject), run_until with breakpoints, and custom workers."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agent_core import AgentRunner, AtStep, CostOver, OnTool, StepKind, StepStatus, Task, TokensOver
from agent_core.errors import StepError, UserError, WorkerStateError
from agent_core.llms import ChatMessage, ChatResponse, ScriptedLLM, Usage
from agent_core.workers import CustomSimpleAgentWorker, ReActAgentWorker

from .conftest import CALLS, SEED_REPLIES

QUESTION = "What is (121 * 3) + 42?"
APPROVAL = {"worker_kwargs": {"tool_approval": True}}


def test_a_tool_call_waits_as_its_own_step_until_approved(make_agent):
    agent, _ = make_agent(**APPROVAL)
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    (call,) = agent.get_upcoming_steps(task.task_id)
    assert call.kind is StepKind.TOOL and call.needs_approval
    assert call.input == {"tool": "multiply", "args": {"a": 121, "b": 3}}
    assert CALLS == []  # Nothing ran before a person approved.
    out = agent.run_step(task.task_id)
    assert CALLS == [("multiply", 121, 3)] and out.output == "363"
    assert agent.get_upcoming_steps(task.task_id)[0].kind is StepKind.LLM


def test_edited_arguments_run_and_the_model_is_told(make_agent):
    agent, llm = make_agent(**APPROVAL)
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    proposed = agent.get_upcoming_steps(task.task_id)[0].input
    out = agent.run_step(task.task_id, input={"tool": "multiply", "args": {"a": 120, "b": 3}})
    assert CALLS == [("multiply", 120, 3)] and out.output == "360"
    assert (
        out.task_step.proposed_input == proposed == {"tool": "multiply", "args": {"a": 121, "b": 3}}
    )
    agent.run_step(task.task_id)
    observation = llm.requests[-1][-1].content
    assert "user changed this call" in observation and observation.endswith("360")


def test_a_rejected_call_does_not_run_and_the_model_reads_why(make_agent):
    agent, llm = make_agent(**APPROVAL)
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    rejected = agent.reject_step(task.task_id, message="Use add first.")
    assert CALLS == []
    step = rejected.task_step
    assert step.rejection == "Use add first." and not step.edited  # Refused, not "edited".
    assert "rejected" not in step.input  # The call stays as the model proposed it.
    assert rejected.tool_calls[0].rejected and rejected.tool_calls[0].is_error
    agent.run_step(task.task_id)
    assert "rejected the call of multiply: Use add first." in llm.requests[-1][-1].content


def test_a_malformed_tool_step_input_fails_the_step_and_can_be_fixed(make_agent):
    agent, _ = make_agent(**APPROVAL)
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    call = agent.get_upcoming_steps(task.task_id)[0]
    with pytest.raises(StepError, match=re.escape('must be a JSON object {"tool"')):
        agent.run_step(task.task_id, input="multiply 121 by 3")
    assert agent.get_step(task.task_id, call.step_id).status is StepStatus.FAILED
    out = agent.run_step(task.task_id, input='{"tool": "multiply", "args": {"a": 121, "b": 3}}')
    assert out.output == "363"


def test_rejecting_a_reasoning_step_is_refused(make_agent):
    agent, _ = make_agent(**APPROVAL)
    task = agent.create_task(QUESTION)
    with pytest.raises(UserError, match="only a tool call"):
        agent.reject_step(task.task_id, message="no")


def test_run_until_stops_at_each_tool_call_awaiting_approval(make_agent):
    agent, _ = make_agent(**APPROVAL)
    task = agent.create_task(QUESTION)
    result = agent.run_until(task.task_id)
    assert result.reason == "tool_approval" and len(result.outputs) == 1
    again = agent.run_until(task.task_id)
    assert again.reason == "tool_approval" and again.outputs == []
    agent.run_step(task.task_id)
    assert agent.run_until(task.task_id).reason == "tool_approval"
    agent.run_step(task.task_id)
    assert agent.run_until(task.task_id).reason == "last_step"


def test_run_until_breakpoints(make_agent):
    agent, _ = make_agent([*SEED_REPLIES[:2], *SEED_REPLIES])
    task = agent.create_task(QUESTION)
    at_add = agent.run_until(task.task_id, stop=OnTool("add"))
    assert at_add.reason == "breakpoint" and "'add'" in at_add.detail
    assert [c.tool_name for o in at_add.outputs for c in o.tool_calls] == ["multiply"]
    assert CALLS == [("multiply", 121, 3)]  # add is proposed, not run
    agent.undo_step(task.task_id, steps=2)
    assert agent.run_until(task.task_id, stop=AtStep(1)).outputs[-1].task_step.number == 1
    assert agent.run_until(task.task_id, max_steps=1).reason == "max_steps"
    assert agent.run_until(task.task_id, stop=[TokensOver(10**9)]).reason == "last_step"
    assert agent.run_until(task.task_id).reason == "no_step"


def test_cost_breakpoint_stops_once_the_known_cost_is_over():
    priced = ChatResponse(
        message=ChatMessage(role="assistant", content="Action: none\nAction Input: {}"),
        usage=Usage(prompt_tokens=10, completion_tokens=5, cost_usd=0.02),
    )
    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=ScriptedLLM([priced] * 5)))
    task = agent.create_task("x")
    result = agent.run_until(task.task_id, stop=CostOver(0.05))
    assert len(result.outputs) == 3 and result.reason == "breakpoint"
    assert agent.get_task(task.task_id).usage.cost_usd == pytest.approx(0.06)
    assert agent.get_task(task.task_id).usage.total_tokens == 45


class Counter(CustomSimpleAgentWorker):
    """Counts to a target held in its state; stops when reached."""

    def _initialize_state(self, task: Task, **kwargs: Any) -> dict[str, Any]:
        return {"count": 0, "target": int(task.input)}

    def _run_step(self, state, task, input):
        state["count"] += 1
        return f"count={state['count']}", state["count"] >= state["target"]


def test_custom_worker_state_is_stored_and_undone():
    agent = AgentRunner(Counter())
    task = agent.create_task("3")
    assert agent.run_step(task.task_id).output == "count=1"
    agent.run_step(task.task_id)
    agent.undo_step(task.task_id)
    assert agent.get_task(task.task_id).extra_state["state"]["count"] == 1
    result = agent.run_until(task.task_id)
    assert [o.output for o in result.outputs] == ["count=2", "count=3"]
    assert agent.finalize_response(task.task_id).response == "count=3"
    assert agent.memory.get_all()[-1].content == "count=3"


class Leaky(CustomSimpleAgentWorker):
    """Leaves a set in its state once: not JSON."""

    broken = True

    def _run_step(self, state, task, input):
        if Leaky.broken:
            state["seen"] = {1, 2}
        return "ok", True


def test_non_serialisable_worker_state_fails_the_step_and_loses_nothing():
    agent = AgentRunner(Leaky())
    task = agent.create_task("go")
    with pytest.raises(WorkerStateError, match=r"cannot be stored as JSON.*\['state'\]"):
        agent.run_step(task.task_id)
    step = agent.get_upcoming_steps(task.task_id)[0]
    assert step.status is StepStatus.FAILED
    assert agent.get_task(task.task_id).extra_state == {"state": {}}
    Leaky.broken = False
    assert agent.run_step(task.task_id).is_last


def test_an_unimplemented_custom_worker_says_what_to_implement():
    agent = AgentRunner(CustomSimpleAgentWorker())
    task = agent.create_task("go")
    with pytest.raises(StepError, match="must implement _run_step"):
        agent.run_step(task.task_id)


def test_scripted_replies_unused_are_visible(make_agent):
    agent, llm = make_agent([*SEED_REPLIES, "extra"])
    agent.chat(QUESTION)
    assert llm.remaining == 1
