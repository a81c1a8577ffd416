"""Breakpoints stop before the action: a held tool call is proposed, not run, and editable."""

from __future__ import annotations

import pytest

from agent_core import AgentRunner, AtStep, OnTool, StepKind, StepStatus
from agent_core.llms import ChatMessage, ChatResponse, ScriptedLLM, ToolCall
from agent_core.workers import FunctionCallingAgentWorker

from .conftest import CALLS, SEED_REPLIES

QUESTION = "What is (121 * 3) + 42?"


@pytest.mark.parametrize("stop", [OnTool(), OnTool("multiply")])
def test_a_tool_breakpoint_stops_a_react_agent_before_the_call_runs(make_agent, stop):
    agent, _ = make_agent()
    task_id = agent.create_task(QUESTION).task_id

    result = agent.run_until(task_id, stop=stop)

    assert result.reason == "breakpoint" and "before tool step 'multiply'" in result.detail
    assert CALLS == []  # Proposed, not executed.
    assert [o.tool_calls for o in result.outputs] == [[]]  # No observation yet.
    (held,) = agent.get_upcoming_steps(task_id)
    assert held.kind is StepKind.TOOL and held.step_state.get("held") and not held.needs_approval
    assert held.input == {"tool": "multiply", "args": {"a": 121, "b": 3}}
    memory = agent.get_task(task_id).memory.get_all()
    assert not [m for m in memory if m.content.startswith("Observation:")]


def test_a_held_call_can_be_edited_then_continue_runs_it_and_stops_at_the_next(make_agent):
    agent, llm = make_agent()
    task_id = agent.create_task(QUESTION).task_id
    agent.run_until(task_id, stop=OnTool())
    held = agent.get_upcoming_steps(task_id)[0]
    agent.edit_step(task_id, held.step_id, {"tool": "multiply", "args": {"a": 120, "b": 3}})

    resumed = agent.run_until(task_id, stop=OnTool(), resume=True)

    assert CALLS == [("multiply", 120, 3)]
    assert resumed.reason == "breakpoint" and "'add'" in resumed.detail  # The next call.
    assert resumed.outputs[0].output == "360"
    assert "user changed this call" in llm.requests[-1][-1].content
    finished = agent.run_until(task_id, resume=True)  # No breakpoint left: run to the end.
    assert finished.reason == "last_step"


def test_a_held_call_can_be_rejected_like_an_approval_step(make_agent):
    agent, llm = make_agent()
    task_id = agent.create_task(QUESTION).task_id
    agent.run_until(task_id, stop=OnTool("multiply"))

    out = agent.reject_step(task_id, message="do it by hand")

    assert CALLS == [] and out.tool_calls[0].rejected
    agent.run_step(task_id)
    assert "rejected the call of multiply: do it by hand" in llm.requests[-1][-1].content


def test_a_breakpoint_on_another_tool_lets_calls_run_inside_the_step(make_agent):
    agent, _ = make_agent()
    task_id = agent.create_task(QUESTION).task_id

    result = agent.run_until(task_id, stop=OnTool("add"))

    assert CALLS == [("multiply", 121, 3)]  # Not held: ran as part of step 1.
    assert result.reason == "breakpoint" and "'add'" in result.detail
    assert agent.get_upcoming_steps(task_id)[0].input["tool"] == "add"


def _calls(*calls: tuple[str, dict]) -> ChatResponse:
    tool_calls = tuple(ToolCall(id=f"c{i}", name=n, args=a) for i, (n, a) in enumerate(calls))
    return ChatResponse(message=ChatMessage(role="assistant", content="", tool_calls=tool_calls))


def test_a_tool_breakpoint_stops_a_function_calling_agent_before_the_call(tools):
    llm = ScriptedLLM(
        [
            _calls(("multiply", {"a": 121, "b": 3}), ("add", {"a": 1, "b": 2})),
            _calls(("add", {"a": 363, "b": 42})),
            "405",
        ]
    )
    agent = AgentRunner(FunctionCallingAgentWorker(tools, llm))
    task_id = agent.create_task(QUESTION).task_id

    result = agent.run_until(task_id, stop=OnTool("add"))

    assert CALLS == [("multiply", 121, 3)]  # multiply is not held: it ran as its own step.
    assert result.reason == "breakpoint" and "'add'" in result.detail
    held = next(s for s in agent.get_upcoming_steps(task_id) if s.kind is StepKind.TOOL)
    assert held.step_state.get("held") and held.input["args"] == {"a": 1, "b": 2}


def test_at_step_stops_once_and_a_later_run_goes_past_it(make_agent):
    agent, _ = make_agent()
    task_id = agent.create_task(QUESTION).task_id

    first = agent.run_until(task_id, stop=AtStep(1))
    again = agent.run_until(task_id, stop=AtStep(1), resume=True)
    later = agent.run_until(task_id, stop=AtStep(1))

    assert first.reason == "breakpoint" and len(first.outputs) == 1
    assert again.reason == "last_step"  # It does not stop at every later step.
    assert later.reason == "no_step"
    assert len(agent.get_completed_steps(task_id)) == 3


def test_skip_is_history_that_undo_brings_back(make_agent):
    agent, _ = make_agent()
    task_id = agent.create_task(QUESTION).task_id
    first = agent.get_upcoming_steps(task_id)[0]

    agent.skip_step(task_id, first.step_id)

    assert agent.get_upcoming_steps(task_id) == []
    (skipped,) = agent.get_task_state(task_id).completed
    assert agent.get_step(task_id, skipped).status is StepStatus.SKIPPED
    back = agent.undo_step(task_id)
    assert back.status is StepStatus.UPCOMING and back.input == QUESTION
    assert agent.run_until(task_id).reason == "last_step"


def test_skip_then_feedback_then_undo_goes_back_without_an_index_error(make_agent):
    agent, _ = make_agent()
    task_id = agent.create_task(QUESTION).task_id
    agent.skip_step(task_id, agent.get_upcoming_steps(task_id)[0].step_id)
    agent.add_feedback(task_id, "use add")

    undone = agent.undo_step(task_id)  # the feedback
    assert undone.kind is not StepKind.HUMAN or undone.status is StepStatus.UNDONE
    agent.undo_step(task_id)  # the skip
    assert [s.input for s in agent.get_upcoming_steps(task_id)] == [QUESTION]


def test_skip_survives_a_reload_from_sqlite(tools, tmp_path):
    from agent_core.store import SQLiteStore
    from agent_core.workers import ReActAgentWorker

    def runner() -> AgentRunner:
        llm = ScriptedLLM(list(SEED_REPLIES))
        return AgentRunner(
            ReActAgentWorker.from_tools(tools, llm=llm), store=SQLiteStore(tmp_path / "t.db")
        )

    agent = runner()
    task_id = agent.create_task(QUESTION).task_id
    agent.skip_step(task_id, agent.get_upcoming_steps(task_id)[0].step_id)

    again = runner()
    assert len(again.get_task_state(task_id).completed) == 1
    assert again.undo_step(task_id).status is StepStatus.UPCOMING


@pytest.mark.parametrize(
    ("stop", "stops"), [(OnTool(), True), (OnTool("add"), True), (OnTool("divide"), False)]
)
def test_a_tool_breakpoint_reads_each_call_of_a_queued_batch(stop, stops):
    # A framework that runs a reply's calls together (pydantic-ai) queues them as one step.
    from agent_core.types import Task, TaskState, TaskStep

    task = Task(input="q")
    batch = TaskStep(
        task_id=task.task_id,
        kind=StepKind.TOOL,
        input={"calls": [{"tool": "multiply", "args": {}}, {"tool": "add", "args": {}}]},
    )
    said = stop(TaskState(task=task), batch)
    assert (said is not None) is stops
    if stops:
        assert said.startswith("breakpoint: before tool step")
