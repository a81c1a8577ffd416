"""An OpenAI Agents SDK `Agent`, registered as the user's agent, stepped by Stepwise's runner.

The agent is the SDK's own (`Agent`, `function_tool`, `OpenAIChatCompletionsModel` on an
`AsyncOpenAI` client) and talks to the tests' loopback OpenAI server over real sockets; every
scripted reply must be consumed. The user's project is a tmp folder with an `agent.py`, loaded
through `UserCodeRegistry` and `AgentSpec` as the app loads it, on a real SQLite store.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, add_trace_processor, function_tool
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.tracing.processor_interface import TracingProcessor
from openai import AsyncOpenAI

from agent_core import AgentRunner
from agent_core.adapters import adapt
from agent_core.adapters.openai_agents import (
    STATE_KEY,
    OpenAIAgentsWorker,
    disconnect_mcp_servers,
)
from agent_core.errors import StepError, UserError
from agent_core.events import TokenDeltaEvent
from agent_core.runtime.breakpoints import OnTool
from agent_core.runtime.loop import run_sync
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.types import StepAction, StepKind, StepStatus
from agent_core.user_code.registry import UserCodeRegistry
from tests.agent_core._user_projects import isolated_imports, write_project
from tests.llm_servers import OpenAIServer, Reply, ReplyToolCall

pytestmark = pytest.mark.usefixtures(isolated_imports.__name__)

AGENT_FILE = '''
"""A user's Agents SDK agent: a calculator that can hand off to a checker."""

from pathlib import Path

from agents import Agent, function_tool
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from openai import AsyncOpenAI

CALLS = Path(__file__).with_name("calls.log")
model = OpenAIChatCompletionsModel(
    model="gpt-4o-mini",
    openai_client=AsyncOpenAI(base_url="{url}/v1", api_key="test"),
)


def _record(line: str) -> None:
    with CALLS.open("a") as log:
        log.write(line + "\\n")


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    _record(f"add {{a}} {{b}}")
    return a + b


@function_tool(needs_approval=True)
def multiply(a: int, b: int) -> int:
    """Multiply two integers (a person approves each call)."""
    _record(f"multiply {{a}} {{b}}")
    return a * b


@function_tool(failure_error_function=None)
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    _record(f"divide {{a}} {{b}}")
    return a / b


checker = Agent(
    name="Checker",
    instructions="You check the arithmetic of others.",
    handoff_description="Checks a result.",
    model=model,
)
agent = Agent(
    name="Calculator",
    instructions="You do arithmetic with your tools.",
    tools=[add, multiply, divide],
    handoffs=[checker],
    model=model,
)
'''


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(api_key="test") as running:
        yield running
        assert running.remaining == 0, "the agent did not use every scripted reply"


@pytest.fixture
def project(tmp_path: Path, server: OpenAIServer) -> Path:
    return write_project(tmp_path / "project", {"agent.py": AGENT_FILE.format(url=server.url)})


def build(project: Path, **spec: Any) -> AgentRunner:
    registry = UserCodeRegistry(project=project, agents={"oa": "agent.py:agent"})
    recorded = AgentSpec.from_registry(registry, agent="oa", tools=(), **spec)
    return recorded.build_runner(store=SQLiteStore(project / "stepwise.db"), registry=registry)


def calls(project: Path) -> list[str]:
    log = project / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def call(name: str, call_id: str, **args: int) -> ReplyToolCall:
    return ReplyToolCall(name, args, id=call_id)


def handoff_call(call_id: str) -> ReplyToolCall:
    return ReplyToolCall("transfer_to_checker", {}, id=call_id)


def sent(server: OpenAIServer, index: int = -1) -> list[dict[str, Any]]:
    """The messages of one request the model server received."""
    return server.model_requests[index].json["messages"]


def upcoming(runner: AgentRunner, task_id: str) -> list[tuple[str, str | None]]:
    return [(s.kind.value, s.name) for s in runner.get_upcoming_steps(task_id)]


def test_two_tools_run_one_step_at_a_time_to_the_answer(project, server):
    server.script(
        Reply(
            text="Adding and dividing.",
            tool_calls=[call("add", "c1", a=2, b=3), call("divide", "c2", a=8, b=4)],
        ),
        Reply(text="2+3 is 5 and 8/4 is 2.0."),
    )
    runner = build(project)
    task = runner.create_task("What are 2+3 and 8/4?")
    assert upcoming(runner, task.task_id) == [("llm", "Calculator turn 1")]

    first = runner.run_step(task.task_id)
    assert first.output == "Adding and dividing." and not first.is_last
    assert first.usage.prompt_tokens == 11 and first.usage.completion_tokens == 7
    assert [m.role for m in first.messages_sent] == ["system", "user"]
    assert upcoming(runner, task.task_id) == [
        ("tool", "add"),
        ("tool", "divide"),
        ("llm", "Calculator turn 2"),
    ]
    add_step, _, _ = runner.get_upcoming_steps(task.task_id)
    assert add_step.input == {"tool": "add", "args": {"a": 2, "b": 3}, "call_id": "c1"}
    assert not add_step.needs_approval and calls(project) == []  # Nothing ran yet.

    assert runner.run_step(task.task_id).output == "5"
    assert calls(project) == ["add 2 3"]
    assert runner.run_step(task.task_id).output == "2.0"
    last = runner.run_step(task.task_id)
    assert last.is_last and last.output == "2+3 is 5 and 8/4 is 2.0."

    # The second request carries the calls and both results, right after them.
    assert [(m["role"], m.get("tool_call_id")) for m in sent(server)] == [
        ("system", None),
        ("user", None),
        ("assistant", None),
        ("tool", "c1"),
        ("tool", "c2"),
    ]
    assert [m["content"] for m in sent(server)[-2:]] == ["5", "2.0"]
    memory = runner.get_task(task.task_id).memory.get_all()
    assert [m.role for m in memory] == ["user", "assistant", "tool", "tool", "assistant"]
    assert runner.finalize_response(task.task_id).response == "2+3 is 5 and 8/4 is 2.0."


def test_calls_of_one_turn_run_together_and_the_next_turn_gets_every_result(project, server):
    server.script(
        Reply(tool_calls=[call("add", "c1", a=1, b=1), call("add", "c2", a=2, b=2)]),
        Reply(text="2 and 4."),
    )
    runner = build(project)
    task = runner.create_task("1+1 and 2+2?")
    runner.run_step(task.task_id)
    together = runner.run_steps_in_queue(task.task_id)  # The two ready tool steps, at once.
    assert sorted(out.output for out in together) == ["2", "4"]
    assert sorted(calls(project)) == ["add 1 1", "add 2 2"]
    assert runner.run_step(task.task_id).output == "2 and 4."
    results = [(m["tool_call_id"], m["content"]) for m in sent(server) if m["role"] == "tool"]
    assert results == [("c1", "2"), ("c2", "4")]  # In the model's order, whichever ran first.


def test_a_streamed_turn_sends_its_tokens_as_they_come_and_ends_as_the_plain_one(project, server):
    server.script(
        Reply(text="Let me add.", tool_calls=[call("add", "c1", a=2, b=2)]),
        Reply(text="Two and two make four."),
    )
    runner = build(project)
    task = runner.create_task("2+2?")
    events = list(runner.stream_step(task.task_id))
    deltas = [e.delta for e in events if isinstance(e, TokenDeltaEvent)]
    assert len(deltas) > 1 and "".join(deltas) == "Let me add."
    first = events[-1].output
    # The SDK asks only OpenAI's own API for usage in a stream: the counts are estimated.
    assert first.output == "Let me add." and first.usage.estimated
    assert first.usage.prompt_tokens > 0 and first.usage.completion_tokens > 0
    assert [s.name for s in first.next_steps] == ["add", "Calculator turn 2"]
    assert server.model_requests[-1].json["stream"] is True
    tool_events = list(runner.stream_step(task.task_id))
    assert [type(e).__name__ for e in tool_events] == [
        "StepStartedEvent",
        "ToolCallStartedEvent",
        "ToolCallFinishedEvent",
        "StepCompletedEvent",
    ]
    last = list(runner.stream_step(task.task_id))[-1].output
    assert last.is_last and last.output == "Two and two make four."
    assert [(m["role"], m.get("tool_call_id")) for m in sent(server)][-2:] == [
        ("assistant", None),
        ("tool", "c1"),
    ]


def test_a_stream_that_ends_empty_is_asked_again_unstreamed(project, server):
    # llama-cpp-python's server opens a stream for a request with tools and ends it before any
    # chunk; the SDK makes that an empty final answer. The adapter asks the same request
    # unstreamed, as Stepwise's own models do, and the turn goes on with the real reply.
    server.script(Reply(tool_calls=[call("add", "c1", a=2, b=3)]), Reply(text="Five."))
    server.quirks.add("streamed_tools_refused")
    runner = build(project)
    task = runner.create_task("2+3?")
    first = list(runner.stream_step(task.task_id))[-1].output
    assert server.quirk_hits["streamed_tools_refused"] == 1  # The fault was injected.
    assert not first.is_last and [s.name for s in first.next_steps] == ["add", "Calculator turn 2"]
    asked = [r.json.get("stream", False) for r in server.model_requests]
    assert asked == [True, False]
    assert server.model_requests[0].json["messages"] == server.model_requests[1].json["messages"]
    runner.run_step(task.task_id)
    last = list(runner.stream_step(task.task_id))[-1].output
    assert last.is_last and last.output == "Five."


CUSTOM_MODEL_FILE = """
from agents import Agent, Model, ModelResponse, Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText


class Echo(Model):
    async def get_response(self, *args, **kwargs):
        text = ResponseOutputText(text="Hi.", type="output_text", annotations=[])
        message = ResponseOutputMessage(
            id="m1", content=[text], role="assistant", status="completed", type="message"
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


agent = Agent(name="Echo", model=Echo())
"""


def test_a_custom_model_without_stream_response_fails_with_an_error_naming_it(tmp_path):
    project = write_project(tmp_path / "custom", {"agent.py": CUSTOM_MODEL_FILE})
    runner = build(project)
    task = runner.create_task("Hi?")
    assert runner.run_step(task.task_id).output == "Hi."  # Unwatched: get_response.
    runner.undo_step(task.task_id)
    with pytest.raises(StepError) as raised:
        list(runner.stream_step(task.task_id))
    assert raised.value.params["cause_code"] == "model_stream_unimplemented"
    assert "Echo.stream_response" in str(raised.value)


def test_the_adapter_sends_what_the_sdks_runner_sends_and_keeps_its_input_list(tmp_path):
    def script() -> list[Reply]:
        return [
            Reply(tool_calls=[call("add", "c1", a=1, b=2), handoff_call("c2")]),
            Reply(text="Checked: 3."),
        ]

    def make(server: OpenAIServer) -> Agent[Any]:
        client = AsyncOpenAI(base_url=server.url + "/v1", api_key="test")
        model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)

        @function_tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        checker = Agent(name="Checker", instructions="Check it.", model=model)
        return Agent(name="Calc", instructions="Add.", tools=[add], handoffs=[checker], model=model)

    with OpenAIServer(script()) as alone, OpenAIServer(script()) as stepped:
        config = RunConfig(tracing_disabled=True)
        result = asyncio.run(Runner.run(make(alone), "What is 1+2?", run_config=config))
        runner = AgentRunner(OpenAIAgentsWorker(make(stepped)))
        task = runner.create_task("What is 1+2?")
        kinds = []
        while not (out := runner.run_step(task.task_id)).is_last:
            kinds.append((out.task_step.kind.value, out.task_step.name))
        assert out.output == result.final_output == "Checked: 3."
        assert kinds == [("llm", "Calc turn 1"), ("tool", "add"), ("delegate", "Checker")]
        assert out.task_step.name == "Checker turn 2"
        assert [r.json for r in stepped.model_requests] == [r.json for r in alone.model_requests]
        state = runner.get_task(task.task_id).extra_state[STATE_KEY]
        assert state["input"] == result.to_input_list() and state["agent"] == "Checker"


def test_undo_the_last_tool_step_and_run_it_again_with_an_edited_input(project, server):
    server.script(
        Reply(tool_calls=[call("add", "c1", a=2, b=3)]),
        Reply(text="The sum is 12."),
    )
    runner = build(project)
    task = runner.create_task("What is 2+3?")
    runner.run_step(task.task_id)
    before = runner.get_task(task.task_id)
    assert runner.run_step(task.task_id).output == "5"

    undone = runner.undo_step(task.task_id)
    assert undone.kind is StepKind.TOOL and undone.status is StepStatus.UPCOMING
    after_undo = runner.get_task(task.task_id)
    assert after_undo.extra_state == before.extra_state
    assert after_undo.memory.get_all() == before.memory.get_all()

    edited = {"tool": "add", "args": {"a": 5, "b": 7}, "call_id": "c1"}
    rerun = runner.run_step(task.task_id, input=edited)
    assert rerun.task_step.edited and rerun.task_step.proposed_input["args"] == {"a": 2, "b": 3}
    assert rerun.output.endswith("12") and calls(project) == ["add 2 3", "add 5 7"]
    assert runner.run_step(task.task_id).output == "The sum is 12."
    # The model read the edited call's result, told that the person changed its call.
    result = sent(server)[-1]
    assert result["role"] == "tool" and result["content"] == (
        '(The user changed this call to add with {"a": 5, "b": 7}.) 12'
    )


def test_a_needs_approval_tool_is_approved_with_edited_args_or_rejected_with_a_reason(
    project, server
):
    server.script(
        Reply(tool_calls=[call("multiply", "c1", a=6, b=7), call("multiply", "c2", a=9, b=999)]),
        Reply(text="6*8 is 48; I will not multiply big numbers."),
    )
    runner = build(project)
    task = runner.create_task("Multiply 6 by 7, and 9 by 999.")
    runner.run_step(task.task_id)
    first, second, _ = runner.get_upcoming_steps(task.task_id)
    assert first.needs_approval and second.needs_approval
    assert (first.name, second.name) == ("multiply", "multiply")

    approved = runner.run_step(
        task.task_id, {"tool": "multiply", "args": {"a": 6, "b": 8}}, step_id=first.step_id
    )
    assert approved.output.endswith(" 48") and calls(project) == ["multiply 6 8"]
    rejected = runner.reject_step(task.task_id, second.step_id, message="too big to bother")
    assert rejected.tool_calls[0].rejected and calls(project) == ["multiply 6 8"]
    assert runner.run_step(task.task_id).is_last

    results = [m for m in sent(server) if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == ["c1", "c2"]  # The edit kept the call's id.
    assert results[1]["content"] == "The user rejected the call of multiply: too big to bother"


def test_tool_approval_from_the_spec_holds_every_call(project, server):
    server.script(Reply(tool_calls=[call("add", "c1", a=1, b=1)]), Reply(text="2"))
    runner = build(project, tool_approval=True)
    task = runner.create_task("1+1?")
    runner.run_step(task.task_id)
    (add_step, _) = runner.get_upcoming_steps(task.task_id)
    assert add_step.needs_approval and calls(project) == []
    runner.run_step(task.task_id)
    assert runner.run_step(task.task_id).output == "2"


def test_a_handoff_is_a_delegate_step_and_the_other_agent_takes_the_next_turn(project, server):
    server.script(
        Reply(text="Passing it on.", tool_calls=[handoff_call("h1")]),
        Reply(text="Checked: correct."),
    )
    runner = build(project)
    task = runner.create_task("Is 2+2=4?")
    runner.run_step(task.task_id)
    (delegate,) = runner.get_upcoming_steps(task.task_id)
    assert delegate.kind is StepKind.DELEGATE and delegate.name == "Checker"
    assert delegate.input["agent"] == "Checker" and delegate.cannot  # It cannot be skipped.
    with pytest.raises(UserError, match="cannot be skipped") as refused:
        runner.skip_step(task.task_id, delegate.step_id)
    assert refused.value.code == "step_action_unsupported"

    handed = runner.run_step(task.task_id)
    assert handed.output == "Calculator handed off to Checker"
    assert upcoming(runner, task.task_id) == [("llm", "Checker turn 2")]
    assert runner.run_step(task.task_id).output == "Checked: correct."
    request = server.model_requests[-1].json
    assert request["messages"][0] == {
        "role": "system",
        "content": "You check the arithmetic of others.",
    }
    assert request["messages"][-1]["content"] == '{"assistant": "Checker"}'
    assert "tools" not in request  # The checker has no tools and no handoffs.


def test_an_undone_handoff_comes_back_with_its_name_and_what_it_cannot_do(project, server):
    server.script(Reply(tool_calls=[handoff_call("h1")]), Reply(text="Checked."))
    runner = build(project)
    task = runner.create_task("Check 2+2=4.")
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)  # The handoff.
    again = runner.undo_step(task.task_id)
    assert again.kind is StepKind.DELEGATE
    assert again.name == "Checker" and StepAction.SKIP in again.cannot
    runner.run_step(task.task_id)
    assert runner.run_step(task.task_id).output == "Checked."


def test_a_new_runner_on_the_same_database_continues_the_task(project, server):
    server.script(Reply(tool_calls=[call("add", "c1", a=20, b=22)]), Reply(text="42."))
    runner = build(project)
    task = runner.create_task("20+22?")
    runner.run_step(task.task_id)

    # A restart: a new registry imports the file afresh; the task's record rebuilds the agent.
    registry = UserCodeRegistry(project=project, agents={"oa": "agent.py:agent"})
    spec = AgentSpec.model_validate(runner.get_task(task.task_id).spec)
    again = spec.build_runner(store=SQLiteStore(project / "stepwise.db"), registry=registry)
    assert again is not runner and isinstance(again.agent_worker, OpenAIAgentsWorker)
    assert again.run_step(task.task_id).output == "42"
    assert again.run_step(task.task_id).output == "42."
    assert [m["role"] for m in sent(server)] == ["system", "user", "assistant", "tool"]


def test_a_tool_that_raises_fails_its_step_with_its_traceback_and_loses_nothing(project, server):
    server.script(Reply(tool_calls=[call("divide", "c1", a=1, b=0)]), Reply(text="0.5"))
    runner = build(project)
    task = runner.create_task("1/0?")
    runner.run_step(task.task_id)
    before = runner.get_task(task.task_id)

    with pytest.raises(StepError, match="ZeroDivisionError") as raised:
        runner.run_step(task.task_id)
    assert calls(project) == ["divide 1 0"]  # The fault happened inside the SDK's tool.
    where = raised.value.params["cause_params"]["traceback"]
    assert "agent.py" in where and "return a / b" in where and "ZeroDivisionError" in where
    assert "function_schema.py" in where or "tool.py" in where  # Through the SDK's FunctionTool.
    failed = runner.get_upcoming_steps(task.task_id)[0]
    assert failed.status is StepStatus.FAILED and failed.error_params["traceback"] == where
    task_now = runner.get_task(task.task_id)
    assert task_now.extra_state == before.extra_state
    assert task_now.memory.get_all() == before.memory.get_all()

    fixed = runner.run_step(task.task_id, input={"tool": "divide", "args": {"a": 1, "b": 2}})
    assert fixed.output.endswith("0.5")
    assert runner.run_step(task.task_id).is_last


def test_a_model_error_fails_the_turn_with_the_sdks_traceback_and_a_retry_goes_on(project, server):
    server.script(
        Reply(status=400, error="the loopback model refuses this once"), Reply(text="Hi.")
    )
    runner = build(project)
    task = runner.create_task("Hello?")
    with pytest.raises(StepError, match="refuses this once") as raised:
        runner.run_step(task.task_id)
    cause = raised.value.params["cause_params"]
    assert cause["exception"] == "BadRequestError"
    assert "agents/models/openai_chatcompletions.py" in cause["traceback"]
    assert runner.get_upcoming_steps(task.task_id)[0].status is StepStatus.FAILED
    assert runner.get_task(task.task_id).memory.get_all() == []
    assert runner.run_step(task.task_id).output == "Hi."
    assert [m["content"] for m in sent(server) if m["role"] == "user"] == ["Hello?"]


def test_the_preview_is_what_the_next_turn_sends(project, server):
    server.script(
        Reply(tool_calls=[call("add", "c1", a=1, b=2)]),
        Reply(text="3."),
    )
    runner = build(project)
    task = runner.create_task("1+2?")
    first_preview = runner.preview_messages(task.task_id)
    runner.run_step(task.task_id)
    (add_step, turn) = runner.get_upcoming_steps(task.task_id)
    assert runner.preview_messages(task.task_id, add_step.step_id) == []  # A tool call.
    runner.run_step(task.task_id)
    second_preview = runner.preview_messages(task.task_id)
    edited_preview = runner.preview_messages(task.task_id, turn.step_id, input="Say it in words.")
    runner.run_step(task.task_id)

    for preview, request in zip(
        [first_preview, second_preview], server.model_requests, strict=True
    ):
        wire = request.json["messages"]
        assert [(m.role, m.content or None) for m in preview] == [
            (m["role"], m.get("content")) for m in wire
        ]
        assert [m.tool_call_id for m in preview] == [m.get("tool_call_id") for m in wire]
    assert edited_preview[-1].role == "user" and edited_preview[-1].content == "Say it in words."
    assert runner.get_messages_sent(task.task_id, turn.step_id) == second_preview


def test_a_tool_breakpoint_stops_before_the_call(project, server):
    server.script(
        Reply(tool_calls=[call("add", "c1", a=1, b=2), call("divide", "c2", a=9, b=3)]),
        Reply(text="3 and 3.0"),
    )
    runner = build(project)
    task = runner.create_task("1+2 and 9/3?")
    stopped = runner.run_until(task.task_id, stop=[OnTool("divide")])
    assert stopped.reason == "breakpoint" and "divide" in stopped.detail
    assert calls(project) == ["add 1 2"]  # add ran; divide waits, held.
    held = runner.get_upcoming_steps(task.task_id)[0]
    assert held.name == "divide" and held.step_state.get("held") and not held.needs_approval

    runner.run_step(task.task_id, input={"tool": "divide", "args": {"a": 9, "b": 9}})
    assert runner.run_until(task.task_id).is_last
    assert calls(project) == ["add 1 2", "divide 9 9"]


def test_feedback_reaches_the_model_after_the_tool_results(project, server):
    server.script(Reply(tool_calls=[call("add", "c1", a=1, b=2)]), Reply(text="Three."))
    runner = build(project)
    task = runner.create_task("1+2?")
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)
    runner.add_feedback(task.task_id, "Answer in words, please.")
    assert runner.preview_messages(task.task_id)[-1].content == "Answer in words, please."
    runner.run_step(task.task_id)
    assert [(m["role"], m["content"]) for m in sent(server)[-2:]] == [
        ("tool", "3"),
        ("user", "Answer in words, please."),
    ]


def test_a_skipped_call_is_answered_so_the_model_knows_it_did_not_run(project, server):
    server.script(Reply(tool_calls=[call("add", "c1", a=1, b=2)]), Reply(text="Skipped, fine."))
    runner = build(project)
    task = runner.create_task("1+2?")
    runner.run_step(task.task_id)
    runner.skip_step(task.task_id, runner.get_upcoming_steps(task.task_id)[0].step_id)
    assert runner.run_step(task.task_id).is_last and calls(project) == []
    assert sent(server)[-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "This call did not run: the user skipped it.",
    }


def test_a_turn_cannot_be_skipped_and_says_why_so_the_task_goes_on(project, server):
    # A skipped turn left "0 upcoming": the SDK's run goes on only from a model's reply.
    server.script(Reply(tool_calls=[call("add", "c1", a=1, b=2)]), Reply(text="3."))
    runner = build(project)
    task = runner.create_task("1+2?")
    (first,) = runner.get_upcoming_steps(task.task_id)
    assert "goes on only from a model turn" in first.cannot[StepAction.SKIP]
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)  # The add call.
    (turn,) = runner.get_upcoming_steps(task.task_id)
    assert turn.kind is StepKind.LLM and StepAction.SKIP in turn.cannot
    with pytest.raises(UserError, match="cannot be skipped") as refused:
        runner.skip_step(task.task_id, turn.step_id)
    assert refused.value.code == "step_action_unsupported"
    assert upcoming(runner, task.task_id) == [("llm", "Calculator turn 2")]
    assert runner.run_step(task.task_id).output == "3."


class _Recorder(TracingProcessor):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_trace_start(self, trace: Any) -> None:
        self.seen.append(f"trace {trace.name}")

    def on_trace_end(self, trace: Any) -> None:
        pass

    def on_span_start(self, span: Any) -> None:
        self.seen.append(f"span {type(span.span_data).__name__}")

    def on_span_end(self, span: Any) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


def test_the_sdk_records_and_exports_no_trace_even_for_an_agent_used_as_a_tool(server):
    # An agent used as a tool runs a nested Runner.run, which starts a trace of its own
    # unless one is current: the adapter's disabled trace must be the current one.
    server.script(
        Reply(tool_calls=[ReplyToolCall("ask_poet", {"input": "a haiku"}, id="c1")]),
        Reply(text="Moon over water."),
        Reply(text="Here it is: Moon over water."),
    )
    client = AsyncOpenAI(base_url=server.url + "/v1", api_key="test")
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    poet = Agent(name="Poet", instructions="Write poems.", model=model)
    tool = poet.as_tool(tool_name="ask_poet", tool_description="Ask the poet.")
    host = Agent(name="Host", instructions="Delegate poems.", tools=[tool], model=model)
    recorder = _Recorder()
    add_trace_processor(recorder)
    runner = AgentRunner(adapt(host))
    task = runner.create_task("A poem, please.")
    while not runner.run_step(task.task_id).is_last:
        pass
    assert runner.get_task_output(task.task_id).output == "Here it is: Moon over water."
    assert recorder.seen == []
    # The recorder itself works: a run the SDK traces reaches it. (A client of its own: the
    # first one's keep-alive connection belongs to the runtime's loop, not asyncio.run's.)
    server.script(Reply(text="traced"))
    own = AsyncOpenAI(base_url=server.url + "/v1", api_key="test")
    alone = poet.clone(model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=own))
    asyncio.run(Runner.run(alone, "hi"))
    assert recorder.seen[0] == "trace Agent workflow"


def test_an_agents_own_mcp_server_gives_tools_through_the_adapter(server):
    from agents.mcp import MCPServerStdio

    time_server = MCPServerStdio(
        params={"command": str(Path(__import__("sys").executable).with_name("mcp-server-time"))},
        name="time",
        client_session_timeout_seconds=30,
    )
    call_time = ReplyToolCall("get_current_time", {"timezone": "Europe/Paris"}, id="t1")
    server.script(Reply(tool_calls=[call_time]), Reply(text="It is some time in Paris."))
    client = AsyncOpenAI(base_url=server.url + "/v1", api_key="test")
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    agent = Agent(
        name="Clock", instructions="Tell the time.", mcp_servers=[time_server], model=model
    )
    runner = AgentRunner(adapt(agent, tool_approval=True))
    task = runner.create_task("What time is it in Paris?")
    runner.run_step(task.task_id)
    assert "get_current_time" in [
        t["function"]["name"] for t in server.model_requests[0].json["tools"]
    ]
    (call_step, _) = runner.get_upcoming_steps(task.task_id)
    assert call_step.name == "get_current_time" and call_step.needs_approval
    result = runner.run_step(task.task_id)
    assert json.loads(result.output)["timezone"] == "Europe/Paris"
    assert runner.run_step(task.task_id).is_last
    assert "Europe/Paris" in json.dumps(sent(server)[-1]["content"])  # The model read it.
    run_sync(disconnect_mcp_servers(), name="test")
    assert time_server.session is None


def test_tool_use_behavior_and_output_type_are_honoured(server):
    from pydantic import BaseModel

    class Sum(BaseModel):
        total: int

    server.script(
        Reply(tool_calls=[ReplyToolCall("add", {"a": 4, "b": 5}, id="c1")]),
        Reply(text='{"total": 9}'),
    )
    client = AsyncOpenAI(base_url=server.url + "/v1", api_key="test")
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)

    @function_tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    stops = Agent(name="Stops", tools=[add], model=model, tool_use_behavior="stop_on_first_tool")
    runner = AgentRunner(adapt(stops))
    task = runner.create_task("4+5")
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)
    assert runner.preview_messages(task.task_id) == []  # No model call: the tool's result ends it.
    last = runner.run_step(task.task_id)
    assert last.is_last and last.output == "9" and len(server.model_requests) == 1

    typed = Agent(name="Typed", model=model, output_type=Sum)
    runner = AgentRunner(adapt(typed))
    task = runner.create_task("4+5 as JSON")
    assert json.loads(runner.run_step(task.task_id).output) == {"total": 9}
    assert server.model_requests[-1].json["response_format"]["type"] == "json_schema"


def test_the_example_agent_runs_with_an_approved_save(tmp_path, monkeypatch, server):
    example = Path(__file__).resolve().parents[3] / "examples" / "openai_agents_agent.py"
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("NOTES_DIR", str(tmp_path / "notes"))
    server.script(
        Reply(tool_calls=[ReplyToolCall("word_count", {"text": "one two three"}, id="w1")]),
        Reply(tool_calls=[ReplyToolCall("save_note", {"title": "Count", "text": "one two three"})]),
        Reply(text="Saved count.md."),
    )
    registry = UserCodeRegistry(project=tmp_path, agents={"helper": f"{example}:agent"})
    runner = AgentSpec.from_registry(registry, agent="helper", tools=()).build_runner(
        registry=registry
    )
    task = runner.create_task("Keep 'one two three' as a note.")
    names = []
    while not (out := runner.run_step(task.task_id)).is_last:
        names.append(out.task_step.name)
        waiting = [s for s in runner.get_upcoming_steps(task.task_id) if s.needs_approval]
        assert [s.name for s in waiting] in ([], ["save_note"])
    assert names == ["Note taker turn 1", "word_count", "Note taker turn 2", "save_note"]
    assert (tmp_path / "notes" / "count.md").read_text() == "# Count\n\none two three\n"
    assert out.output == "Saved count.md."


def test_the_tasks_limits_bound_the_turns_and_raising_them_goes_on(project, server):
    """Issue 32 item 2: max_turns was the worker's alone; the task's Limits now lift it."""
    server.script(Reply(tool_calls=[call("add", "c1", a=1, b=1)]), Reply(text="2."))
    runner = build(project)
    task = runner.create_task("1+1?")
    runner.set_limits(task.task_id, max_iterations=1)
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)  # The add call.

    with pytest.raises(StepError) as caught:
        runner.run_step(task.task_id)  # Turn 2 would pass the bound.
    cause = caught.value.__cause__
    assert isinstance(cause, StepError) and cause.code == "max_iterations"
    assert (cause.remedy, cause.params) == ("raise_limits", {"limit": 1, "unit": "turn"})

    runner.set_limits(task.task_id, max_iterations=2)
    assert runner.run_step(task.task_id).output == "2."
