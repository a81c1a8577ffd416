"""Sample N: one upcoming model step sent N times, grouped, and continued with a chosen reply."""

from __future__ import annotations

from typing import Any

import pytest

from agent_core import AgentRunner, StepKind, StepStatus
from agent_core.errors import UserError
from agent_core.llms import ChatMessage, ChatResponse, FunctionLLM, Usage
from agent_core.llms.base import ToolCall
from agent_core.runtime.sampling import SampledReply, group_replies
from agent_core.tools import FunctionTool
from agent_core.workers import FunctionCallingAgentWorker, ReActAgentWorker


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


def _call(name: str, args: dict[str, Any], *, tokens: int = 10) -> ChatResponse:
    message = ChatMessage(role="assistant", tool_calls=(ToolCall(id="c", name=name, args=args),))
    usage = Usage(prompt_tokens=tokens, completion_tokens=2, cost_usd=0.001)
    return ChatResponse(message=message, usage=usage)


class _ByCount:
    """A model whose reply depends on how many times it was called (the spread to sample)."""

    def __init__(self, replies: list[ChatResponse | str]) -> None:
        self.replies = replies
        self.calls = 0
        self.requests: list[list[ChatMessage]] = []

    def __call__(self, messages: list[ChatMessage], tools: Any) -> ChatResponse | str:
        self.requests.append(list(messages))
        reply = self.replies[self.calls % len(self.replies)]
        self.calls += 1
        return reply


def _runner(replies: list[ChatResponse | str]) -> tuple[AgentRunner, _ByCount]:
    model = _ByCount(replies)
    tools = [FunctionTool.from_defaults(fn=add), FunctionTool.from_defaults(fn=multiply)]
    worker = FunctionCallingAgentWorker.from_tools(tools, llm=FunctionLLM(model))
    return AgentRunner(worker), model


SPREAD = [
    _call("add", {"a": 2, "b": 3}),
    _call("add", {"b": 3, "a": 2}),  # The same call, its arguments in another order.
    _call("multiply", {"a": 2, "b": 3}),
    "It is  5.",
    "It is 5.\n",
]


def test_sample_groups_replies_by_what_the_step_would_do() -> None:
    runner, model = _runner(SPREAD)
    task = runner.create_task("What is 2 + 3?")

    sample = runner.sample_step(task.task_id, n=5)

    assert model.calls == 5
    assert [(g.kind, g.count) for g in sample.groups] == [
        ("tool_calls", 2),
        ("answer", 2),
        ("tool_calls", 1),
    ]
    first = sample.groups[0]
    assert first.label == 'add({"a": 2, "b": 3})'
    assert first.share == pytest.approx(0.4)
    assert first.tokens == 24
    assert first.cost_usd == pytest.approx(0.002)
    assert sample.groups[1].label == "It is 5."
    # The request sampled is exactly what the step would send: the question, as a user message.
    assert [m.content for m in sample.messages] == ["What is 2 + 3?"]
    assert all(request == model.requests[0] for request in model.requests)


def test_sampling_changes_nothing_in_the_task() -> None:
    runner, _ = _runner(SPREAD)
    task = runner.create_task("What is 2 + 3?")
    before = runner.get_task_state(task.task_id).model_dump(mode="json")

    runner.sample_step(task.task_id, n=3)

    state = runner.get_task_state(task.task_id)
    assert state.model_dump(mode="json") == before
    assert state.completed == []
    assert len(state.task.memory.get_all()) == 0


def test_continue_with_a_group_commits_its_reply_without_a_model_call() -> None:
    runner, model = _runner(SPREAD)
    task = runner.create_task("What is 2 + 3?")
    sample = runner.sample_step(task.task_id, n=5)

    output = runner.continue_with_sample(task.task_id, sample, group=2)  # multiply(2, 3)

    assert model.calls == 5  # The step was answered by the sample, not by the model again.
    assert output.task_step.status is StepStatus.COMPLETED
    upcoming = runner.get_upcoming_steps(task.task_id)
    assert upcoming[0].kind is StepKind.TOOL
    assert upcoming[0].input["tool"] == "multiply"
    assert output.usage.cost_usd == pytest.approx(0.001)


def test_undo_then_continue_with_another_group_grows_a_branch() -> None:
    runner, _ = _runner(SPREAD)
    task = runner.create_task("What is 2 + 3?")
    sample = runner.sample_step(task.task_id, n=5)
    first = runner.continue_with_sample(task.task_id, sample, group=0)
    runner.undo_step(task.task_id)

    second = runner.continue_with_sample(task.task_id, sample, group=1)

    assert second.is_last and second.output == "It is  5."
    state = runner.get_task_state(task.task_id)
    assert state.steps[first.task_step.step_id].status is StepStatus.UNDONE
    assert second.task_step.branch_id != first.task_step.branch_id


def test_a_sample_of_another_request_is_refused() -> None:
    runner, _ = _runner([_call("add", {"a": 2, "b": 3})])
    task = runner.create_task("What is 2 + 3?")
    sample = runner.sample_step(task.task_id, n=1)
    runner.run_step(task.task_id)  # The model step: add(2, 3) queued.
    runner.run_step(task.task_id)  # The tool step.

    with pytest.raises(UserError) as caught:
        runner.continue_with_sample(task.task_id, sample)

    assert caught.value.code == "sample_stale"


def test_a_tool_step_cannot_be_sampled() -> None:
    runner, _ = _runner([_call("add", {"a": 2, "b": 3})])
    task = runner.create_task("What is 2 + 3?")
    runner.run_step(task.task_id)
    tool_step = runner.get_upcoming_steps(task.task_id)[0]

    assert "calls no model" in (runner.sample_refusal(task.task_id, tool_step.step_id) or "")
    with pytest.raises(UserError) as caught:
        runner.sample_step(task.task_id, tool_step.step_id)
    assert caught.value.code == "sample_unsupported"


def test_react_samples_without_running_its_tool() -> None:
    ran: list[int] = []

    def noted_add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append(a + b)
        return a + b

    reply = 'Thought: add them\nAction: noted_add\nAction Input: {"a": 2, "b": 3}'
    llm = FunctionLLM(lambda messages, tools: reply)
    worker = ReActAgentWorker.from_tools([FunctionTool.from_defaults(fn=noted_add)], llm=llm)
    runner = AgentRunner(worker)
    task = runner.create_task("What is 2 + 3?")

    sample = runner.sample_step(task.task_id, n=2)

    assert ran == []  # A ReAct step runs its tool in the step: a sample stops before.
    assert [g.count for g in sample.groups] == [2]


def test_failed_calls_are_their_own_group_and_cannot_be_continued_with() -> None:
    replies = [SampledReply(error="boom"), SampledReply(response=_call("add", {"a": 1}))]
    groups = group_replies(replies)
    assert {g.kind for g in groups} == {"error", "tool_calls"}


def test_sample_count_is_bounded() -> None:
    runner, _ = _runner(SPREAD)
    task = runner.create_task("q")
    with pytest.raises(UserError) as caught:
        runner.sample_step(task.task_id, n=0)
    assert caught.value.code == "sample_count_invalid"
