"""A pydantic-ai agent from the user's project, stepped node by node through the runner.

The agent lives in a project file, registered as `pa = "agent.py:agent"` and built through
`AgentSpec.from_registry(...).build_runner(...)`, as the app and a user's script do. Its model
is pydantic-ai's `FunctionModel`, whose replies depend on the request it gets, so each test
reads what the model was sent (`RECEIVED`) and what the tools got (`RAN`), and checks that
every scripted reply was used (`USED`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from agent_core import AgentRunner
from agent_core.errors import StepError, UserError
from agent_core.runtime.breakpoints import OnTool
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.types import StepAction, StepKind, StepStatus
from agent_core.user_code import UserCodeRegistry
from tests.agent_core._user_projects import isolated_imports, write_project  # noqa: F401

pytestmark = pytest.mark.usefixtures("isolated_imports")

QUESTION = "What is (2 + 3) * 10?"

AGENT = '''
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

RECEIVED = []  # every request, as the model got it
USED = set()  # the scripted replies the model gave
RAN = []  # each tool call, as the tool got it
BROKEN = {"model": False, "add": False}


def _reply(name, *parts):
    USED.add(name)
    return ModelResponse(parts=list(parts))


def model(messages, info: AgentInfo):
    RECEIVED.append(messages)
    if BROKEN["model"]:
        raise RuntimeError("the model server is down")
    parts = messages[-1].parts
    returns = [p for p in parts if isinstance(p, ToolReturnPart)]
    said = " ".join(str(p.content) for p in parts if isinstance(p, UserPromptPart))
    denied = [p for p in returns if p.outcome == "denied"]
    if denied:
        return _reply("refused", TextPart(f"I could not go on: {denied[-1].content}"))
    if "both" in said and not returns:
        return _reply(
            "two adds",
            ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="c-one"),
            ToolCallPart("add", {"a": 3, "b": 4}, tool_call_id="c-two"),
        )
    if not returns:
        call = ToolCallPart("add", {"a": 2, "b": 3}, tool_call_id="c-add")
        return _reply("add", TextPart("First I add."), call)
    last = returns[-1]
    if last.tool_name == "add" and len(returns) == 1:
        factor = 100 if "times 100" in said else 10
        return _reply(
            "multiply",
            ToolCallPart("multiply", {"a": last.content, "b": factor}, tool_call_id="c-mul"),
        )
    total = ", ".join(str(p.content) for p in returns)
    return _reply("answer", TextPart(f"The answer is {total}."))


agent = Agent(FunctionModel(model), system_prompt="You are a careful calculator.")


@agent.tool_plain
def add(a: int, b: int) -> int:
    """Add two integers."""
    if BROKEN["add"]:
        raise ValueError("add is broken")
    RAN.append(("add", a, b))
    return a + b


@agent.tool_plain(requires_approval=True)
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    RAN.append(("multiply", a, b))
    return a * b
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "project", {"agent.py": AGENT})


def _runner(project: Path, db: Path, *, tool_approval: bool = False, registry=None):
    registry = registry or UserCodeRegistry(project=project, agents={"pa": "agent.py:agent"})
    spec = AgentSpec.from_registry(registry, agent="pa", tool_approval=tool_approval)
    return spec.build_runner(store=SQLiteStore(db), registry=registry)


def _script(runner) -> ModuleType:
    """The agent file's module, whose lists record what the model and the tools got."""
    agent = runner.agent_worker.agent
    return next(m for m in list(sys.modules.values()) if getattr(m, "agent", None) is agent)


def _only_upcoming(runner, task_id: str):
    (step,) = runner.get_upcoming_steps(task_id)
    return step


def _contents(messages) -> list[list[str]]:
    """What each message of a request says, part by part (no timestamps or run ids)."""
    return [[str(getattr(p, "content", getattr(p, "args", ""))) for p in m.parts] for m in messages]


def _last_request_text(script: ModuleType) -> list[str]:
    """The contents of the parts of the last request the model got."""
    return [str(getattr(part, "content", "")) for part in script.RECEIVED[-1][-1].parts]


def test_the_agent_runs_one_node_at_a_time_to_its_answer(project, tmp_path):
    runner = _runner(project, tmp_path / "s.db")
    script = _script(runner)
    task = runner.create_task(QUESTION)

    first = runner.run_step(task.task_id)
    assert (first.task_step.name, first.task_step.kind) == ("model request", StepKind.LLM)
    assert first.output == "First I add." and first.usage.prompt_tokens > 0
    assert [m.role for m in first.messages_sent] == ["system", "user"]
    assert first.messages_sent[1].content == QUESTION
    add_step = _only_upcoming(runner, task.task_id)
    assert (add_step.name, add_step.kind, add_step.needs_approval) == (
        "call tools: add",
        StepKind.TOOL,
        False,
    )
    assert add_step.input == {"tool": "add", "args": {"a": 2, "b": 3}, "call_id": "c-add"}
    assert script.RAN == []  # Queued, not run: the tool step runs it.

    added = runner.run_step(task.task_id)
    assert added.output == "5" and [c.content for c in added.tool_calls] == ["5"]
    assert added.messages_sent == [] and script.RAN == [("add", 2, 3)]

    asks = runner.run_step(task.task_id)
    assert asks.task_step.name == "model request" and "5" in _last_request_text(script)
    approval = _only_upcoming(runner, task.task_id)
    # multiply requires approval in pydantic-ai: it waits as an approval step.
    assert (approval.name, approval.needs_approval) == ("call tools: multiply", True)
    assert approval.input["args"] == {"a": 5, "b": 10}

    multiplied = runner.run_step(task.task_id)
    assert multiplied.output == "50" and script.RAN[-1] == ("multiply", 5, 10)
    answer = runner.run_step(task.task_id)
    assert answer.is_last and answer.output == "The answer is 50."
    assert str(runner.finalize_response(task.task_id)) == "The answer is 50."
    # The run's usage carries from step to step, so the agent's UsageLimits see the whole task.
    usage = runner.get_task(task.task_id).extra_state["pydantic_ai"]["usage"]
    assert usage["requests"] == 3 and usage["tool_calls"] == 2
    assert runner.agent_worker.own_model == "function:function:model:"  # pydantic-ai's model_id
    assert script.USED == {"add", "multiply", "answer"}

    memory = [(m.role, m.content) for m in runner.get_task(task.task_id).memory.get_all()]
    assert memory[:3] == [("user", QUESTION), ("assistant", "First I add."), ("tool", "5")]
    assert memory[-2:] == [("tool", "50"), ("assistant", "The answer is 50.")]


def test_undo_the_tool_step_and_run_it_again_with_edited_arguments(project, tmp_path):
    runner = _runner(project, tmp_path / "s.db")
    script = _script(runner)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)
    assert script.RAN == [("add", 2, 3)]

    again = runner.undo_step(task.task_id)
    assert again.kind is StepKind.TOOL and again.status is StepStatus.UPCOMING
    assert runner.get_task(task.task_id).memory.get_all()[-1].role == "assistant"
    edited = {"tool": "add", "args": {"a": 20, "b": 3}, "call_id": "c-add"}
    out = runner.run_step(task.task_id, edited)
    assert out.output == "23" and script.RAN[-1] == ("add", 20, 3)
    assert out.task_step.edited and out.task_step.proposed_input["args"] == {"a": 2, "b": 3}

    runner.run_step(task.task_id)  # The model reads the result of the call that ran.
    assert "23" in _last_request_text(script)
    assert _only_upcoming(runner, task.task_id).input["args"] == {"a": 23, "b": 10}


def test_an_approval_edited_runs_the_tool_on_the_edited_arguments(project, tmp_path):
    runner = _runner(project, tmp_path / "s.db")
    script = _script(runner)
    task = runner.create_task(QUESTION)
    stopped = runner.run_until(task.task_id)
    assert stopped.reason == "tool_approval" and script.RAN == [("add", 2, 3)]

    approval = _only_upcoming(runner, task.task_id)
    out = runner.run_step(task.task_id, {**approval.input, "args": {"a": 5, "b": 7}})
    assert out.output == "35" and script.RAN[-1] == ("multiply", 5, 7)
    assert runner.run_until(task.task_id).reason == "last_step"
    assert runner.get_task_output(task.task_id).output == "The answer is 35."


def test_a_rejection_reaches_the_model_with_its_reason(project, tmp_path):
    runner = _runner(project, tmp_path / "s.db")
    script = _script(runner)
    task = runner.create_task(QUESTION)
    runner.run_until(task.task_id)

    rejected = runner.reject_step(task.task_id, message="ten is too big a factor")
    assert rejected.tool_calls[0].rejected and script.RAN == [("add", 2, 3)]
    answer = runner.run_step(task.task_id)
    assert "The user rejected this call: ten is too big a factor" in _last_request_text(script)
    assert answer.is_last and "ten is too big a factor" in answer.output
    assert "refused" in script.USED


def test_tool_approval_from_the_spec_holds_every_call_and_decides_each(project, tmp_path):
    runner = _runner(project, tmp_path / "s.db", tool_approval=True)
    script = _script(runner)
    task = runner.create_task("Add both pairs")
    runner.run_step(task.task_id)

    first, last = runner.get_upcoming_steps(task.task_id)
    assert (first.name, first.needs_approval) == ("approve add", True)
    assert (last.name, last.needs_approval) == ("call tools: add", True)
    assert last.depends_on == [first.step_id]  # The batch runs once both are decided.
    decided = runner.run_step(task.task_id, {**first.input, "args": {"a": 10, "b": 20}})
    assert decided.tool_calls == [] and script.RAN == []  # A decision, not a call.

    ran = runner.reject_step(task.task_id, last.step_id, message="one sum is enough")
    assert script.RAN == [("add", 10, 20)]
    assert [(c.content, c.rejected) for c in ran.tool_calls] == [
        ("30", False),
        ("The user rejected this call: one sum is enough", True),
    ]
    answer = runner.run_step(task.task_id)
    assert answer.is_last and "one sum is enough" in answer.output
    assert script.USED == {"two adds", "refused"}


def test_one_reply_with_two_calls_is_one_step_whose_calls_can_be_edited(project, tmp_path):
    runner = _runner(project, tmp_path / "s.db")
    script = _script(runner)
    task = runner.create_task("Add both pairs")
    runner.run_step(task.task_id)

    batch = _only_upcoming(runner, task.task_id)
    assert batch.name == "call tools: add" and len(batch.input["calls"]) == 2
    calls = [dict(call) for call in batch.input["calls"]]
    calls[1]["args"] = {"a": 30, "b": 4}
    out = runner.run_step(task.task_id, {"calls": calls})
    # pydantic-ai runs a reply's calls concurrently: in either order.
    assert sorted(script.RAN) == [("add", 1, 2), ("add", 30, 4)]
    assert out.output == "add: 3\nadd: 34"
    answer = runner.run_step(task.task_id)
    assert answer.output == "The answer is 3, 34." and script.USED == {"two adds", "answer"}


def test_a_restarted_runner_goes_on_from_the_stored_history(project, tmp_path):
    db = tmp_path / "s.db"
    runner = _runner(project, db)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)
    before = _script(runner)

    # A new process: the registry imports the agent's file again, the store is reopened.
    from agent_core.user_code.imports import forget_user_modules

    forget_user_modules()
    restarted = _runner(project, db)
    after = _script(restarted)
    assert after is not before
    assert restarted.run_until(task.task_id).reason == "tool_approval"
    assert after.RECEIVED[0][-1].parts[0].content == 5  # The history came from the store.
    assert restarted.run_step(task.task_id).output == "50"  # Approved as proposed.
    assert restarted.run_until(task.task_id).reason == "last_step"
    assert restarted.get_task_output(task.task_id).output == "The answer is 50."
    assert before.USED | after.USED == {"add", "multiply", "answer"}


def test_a_tool_that_raises_fails_its_step_with_the_traceback_and_loses_nothing(project, tmp_path):
    runner = _runner(project, tmp_path / "s.db")
    script = _script(runner)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    memory = runner.get_task(task.task_id).memory.get_all()
    script.BROKEN["add"] = True

    with pytest.raises(StepError) as failed:
        runner.run_step(task.task_id)
    where = failed.value.params["cause_params"]["traceback"]
    assert "ValueError: add is broken" in where and "in add" in where
    step = _only_upcoming(runner, task.task_id)
    assert step.status is StepStatus.FAILED and step.error_params["traceback"] == where
    assert runner.get_task(task.task_id).memory.get_all() == memory

    script.BROKEN["add"] = False
    assert runner.run_step(task.task_id).output == "5"
    assert runner.run_until(task.task_id, resume=True).reason == "tool_approval"


def test_a_model_that_raises_fails_its_step_and_a_retry_sends_the_same_request(project, tmp_path):
    runner = _runner(project, tmp_path / "s.db")
    script = _script(runner)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)
    script.BROKEN["model"] = True

    with pytest.raises(StepError) as failed:
        runner.run_step(task.task_id)
    assert (
        "RuntimeError: the model server is down"
        in (failed.value.params["cause_params"]["traceback"])
    )
    script.BROKEN["model"] = False
    out = runner.run_step(task.task_id)
    sent, failed_with = (_contents(script.RECEIVED[i]) for i in (-1, -2))
    assert sent == failed_with  # The same request, sent again.
    assert [m.role for m in out.messages_sent] == ["system", "user", "assistant", "tool"]


def test_the_preview_is_what_the_next_request_sends_and_sends_nothing(project, tmp_path):
    runner = _runner(project, tmp_path / "s.db")
    script = _script(runner)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)

    asked = len(script.RECEIVED)
    step = _only_upcoming(runner, task.task_id)
    preview = runner.preview_messages(task.task_id)
    steered = runner.preview_messages(task.task_id, step.step_id, "Check the sum twice.")
    assert len(script.RECEIVED) == asked  # No request was sent to preview.
    assert [(m.role, m.content) for m in preview] == [
        ("system", "You are a careful calculator."),
        ("user", QUESTION),
        ("assistant", "First I add."),
        ("tool", "5"),
    ]
    assert steered == [*preview, steered[-1]] and steered[-1].content == "Check the sum twice."
    assert preview[2].tool_calls[0].args == {"a": 2, "b": 3}

    out = runner.run_step(task.task_id)
    assert out.messages_sent == preview
    assert runner.preview_messages(task.task_id, _only_upcoming(runner, task.task_id).step_id) == []


def test_a_tool_breakpoint_stops_before_the_tool_runs(project, tmp_path):
    runner = _runner(project, tmp_path / "s.db")
    script = _script(runner)
    task = runner.create_task(QUESTION)

    stopped = runner.run_until(task.task_id, stop=OnTool("add"))
    assert stopped.reason == "breakpoint" and script.RAN == []
    held = _only_upcoming(runner, task.task_id)
    assert held.step_state.get("held") and held.input["tool"] == "add"
    resumed = runner.run_until(task.task_id, stop=OnTool("add"), resume=True)
    assert script.RAN == [("add", 2, 3)] and resumed.reason == "tool_approval"


def test_feedback_reaches_the_next_model_request(project, tmp_path):
    runner = _runner(project, tmp_path / "s.db")
    script = _script(runner)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    runner.add_feedback(task.task_id, "Multiply it times 100 instead.")
    runner.run_step(task.task_id)  # The tool step: the feedback waits for the model.

    runner.run_step(task.task_id)
    assert "Multiply it times 100 instead." in _last_request_text(script)
    assert _only_upcoming(runner, task.task_id).input["args"] == {"a": 5, "b": 100}
    memory = runner.get_task(task.task_id).memory.get_all()
    assert [m.content for m in memory].count("Multiply it times 100 instead.") == 1


def test_an_edited_model_request_input_is_a_user_prompt_of_that_request(project, tmp_path):
    runner = _runner(project, tmp_path / "s.db")
    script = _script(runner)
    task = runner.create_task("Add both pairs")
    runner.run_step(task.task_id, QUESTION)  # In place of the task's prompt: a single add.
    assert _last_request_text(script)[1:] == [QUESTION] and script.USED == {"add"}
    runner.run_step(task.task_id)
    runner.run_step(task.task_id, "Now multiply it times 100.")
    assert _last_request_text(script)[-1] == "Now multiply it times 100."
    assert _only_upcoming(runner, task.task_id).input["args"] == {"a": 5, "b": 100}


def test_steps_cannot_be_skipped_and_say_why(project, tmp_path):
    runner = _runner(project, tmp_path / "s.db")
    task = runner.create_task(QUESTION)
    step = _only_upcoming(runner, task.task_id)
    assert "pydantic-ai" in step.cannot[StepAction.SKIP]
    with pytest.raises(UserError) as refused:
        runner.skip_step(task.task_id, step.step_id)
    assert refused.value.code == "step_action_unsupported"


PAYMENTS = '''
from pydantic import BaseModel
from pydantic_ai import Agent, ApprovalRequired, DeferredToolRequests, RunContext
from pydantic_ai.messages import ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

USED = set()
PAID = []


class Receipt(BaseModel):
    total: int
    note: str


def model(messages, info: AgentInfo):
    returns = {p.tool_name: p for p in messages[-1].parts if isinstance(p, ToolReturnPart)}
    if not returns:
        USED.add("balance and pay")
        return ModelResponse(parts=[
            ToolCallPart("balance", {}, tool_call_id="c-bal"),
            ToolCallPart("pay", {"amount": 150}, tool_call_id="c-pay"),
        ])
    USED.add("receipt")
    (output_tool,) = info.output_tools
    note = f"{returns['pay'].content}, balance was {returns['balance'].content}"
    paid = int(returns["pay"].content.split()[1])
    return ModelResponse(parts=[
        ToolCallPart(output_tool.name, {"total": paid, "note": note}, tool_call_id="c-out")
    ])


agent = Agent(FunctionModel(model), output_type=[Receipt, DeferredToolRequests])


@agent.tool_plain
def balance() -> int:
    return 500


@agent.tool
def pay(ctx: RunContext, amount: int) -> str:
    """Pay an amount; more than 100 needs a person's approval."""
    if amount > 100 and not ctx.tool_call_approved:
        raise ApprovalRequired()
    PAID.append(amount)
    return f"paid {amount}"
'''


def test_a_tool_that_asks_for_approval_as_it_runs_waits_for_a_person(tmp_path):
    project = write_project(tmp_path / "project", {"payments.py": PAYMENTS})
    registry = UserCodeRegistry(project=project, agents={"pa": "payments.py:agent"})
    runner = _runner(project, tmp_path / "s.db", registry=registry)
    script = _script(runner)
    task = runner.create_task("Pay the invoice")
    runner.run_step(task.task_id)
    batch = runner.run_step(task.task_id)  # balance runs; pay asks for approval.
    assert batch.task_step.name == "call tools: balance, pay"
    assert [c.tool_name for c in batch.tool_calls] == ["balance"] and script.PAID == []

    approval = _only_upcoming(runner, task.task_id)
    assert (approval.name, approval.needs_approval) == ("call tools: pay", True)
    paid = runner.run_step(task.task_id, {**approval.input, "args": {"amount": 120}})
    assert script.PAID == [120] and [c.content for c in paid.tool_calls] == ["paid 120"]
    receipt = runner.run_step(task.task_id)  # The model answers through the output tool.
    assert receipt.is_last
    assert receipt.output == {"total": 120, "note": "paid 120, balance was 500"}
    assert script.USED == {"balance and pay", "receipt"}
    tools = [m.content for m in runner.get_task(task.task_id).memory.get_all() if m.role == "tool"]
    assert tools[:2] == ["500", "paid 120"]


MCP_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("units")


@server.tool()
def to_cents(euros: int) -> int:
    """Euros in cents."""
    return euros * 100


if __name__ == "__main__":
    server.run()
'''

MCP_AGENT = """
import sys
from pathlib import Path

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

OFFERED = []


def model(messages, info: AgentInfo):
    OFFERED.append([tool.name for tool in info.function_tools])
    returns = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
    if not returns:
        return ModelResponse(parts=[ToolCallPart("to_cents", {"euros": 3}, tool_call_id="c-1")])
    return ModelResponse(parts=[TextPart(f"That is {returns[0].content} cents.")])


server = Path(__file__).with_name("units_server.py")
units = MCPToolset(StdioTransport(command=sys.executable, args=[str(server)]))
agent = Agent(FunctionModel(model), toolsets=[units])
"""


def test_an_agent_with_its_own_mcp_server_calls_its_tools_through_the_steps(tmp_path):
    pytest.importorskip("fastmcp", reason="pydantic-ai's MCPToolset needs pydantic-ai-slim[mcp]")
    project = write_project(
        tmp_path / "project", {"units_server.py": MCP_SERVER, "mcp_agent.py": MCP_AGENT}
    )
    registry = UserCodeRegistry(project=project, agents={"pa": "mcp_agent.py:agent"})
    runner = _runner(project, tmp_path / "s.db", registry=registry, tool_approval=True)
    script = _script(runner)
    task = runner.create_task("How many cents are 3 euros?")
    runner.run_step(task.task_id)

    call = _only_upcoming(runner, task.task_id)
    assert (call.name, call.needs_approval) == ("call tools: to_cents", True)
    out = runner.run_step(task.task_id, {**call.input, "args": {"euros": 4}})
    assert out.output == "400"  # The MCP server ran the call, with the edited arguments.
    assert runner.run_step(task.task_id).output == "That is 400 cents."
    assert script.OFFERED == [["to_cents"], ["to_cents"]]


def test_the_example_agent_runs_offline_on_pydantic_ais_test_model(tmp_path, monkeypatch):
    monkeypatch.delenv("PYDANTIC_AI_MODEL", raising=False)
    examples = Path(__file__).resolve().parents[3] / "examples"
    registry = UserCodeRegistry(project=examples, agents={"pa": "pydantic_ai_agent.py:agent"})
    runner = _runner(examples, tmp_path / "s.db", registry=registry)
    task = runner.create_task("Add 2 and 3, then convert 10 EUR to USD")
    assert runner.run_until(task.task_id).reason == "tool_approval"

    approval = _only_upcoming(runner, task.task_id)
    assert (approval.name, approval.input["tool"]) == ("call tools: add, convert", "convert")
    ran = runner.run_step(task.task_id, {**approval.input, "args": {"amount": 10}})
    assert [(c.tool_name, c.content) for c in ran.tool_calls] == [
        ("add", "0.0"),
        ("convert", "10.80 USD"),
    ]
    assert runner.run_until(task.task_id).reason == "last_step"
    assert "10.80 USD" in runner.get_task_output(task.task_id).output


def test_a_task_that_continues_a_thread_sends_its_earlier_question_and_answer(project, tmp_path):
    worker = _runner(project, tmp_path / "s.db").agent_worker
    runner = AgentRunner(worker, store=SQLiteStore(tmp_path / "s.db"), conversation_id="calc")
    script = _script(runner)
    first = runner.create_task(QUESTION)
    runner.run_until(first.task_id)
    runner.run_step(first.task_id)
    runner.run_until(first.task_id)
    runner.finalize_response(first.task_id)

    second = runner.create_task("And plus one?")
    runner.run_step(second.task_id)
    said = [[str(getattr(p, "content", "")) for p in m.parts] for m in script.RECEIVED[-1]]
    assert said == [
        ["You are a careful calculator.", QUESTION],  # pydantic-ai's system prompt, put back.
        ["The answer is 50."],
        ["And plus one?"],
    ]


def test_the_tasks_limits_bound_the_model_requests_and_raising_them_goes_on(project, tmp_path):
    """Issue 32 item 2: pydantic-ai's request_limit stopped a task, and nothing lifted it."""
    runner = _runner(project, tmp_path / "s.db")
    task = runner.create_task(QUESTION)
    runner.set_limits(task.task_id, max_iterations=1)
    runner.run_step(task.task_id)  # Request 1, then the add step.
    runner.run_step(task.task_id)

    with pytest.raises(StepError) as caught:
        runner.run_step(task.task_id)  # Request 2 would pass the bound.
    cause = caught.value.__cause__
    assert isinstance(cause, StepError) and cause.code == "max_iterations"
    assert cause.remedy == "raise_limits"
    assert cause.params == {"limit": 1, "unit": "model request"}

    runner.set_limits(task.task_id, max_iterations=3)
    asks = runner.run_step(task.task_id)
    assert asks.task_step.name == "model request" and asks.task_step.number == 3


def test_a_tools_traceback_shows_the_users_frames_before_pydantic_ais(project, tmp_path):
    """Issue 32: the tool's one frame came after ~50 of pydantic-ai's and asyncio's."""
    runner = _runner(project, tmp_path / "s.db")
    script = _script(runner)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    script.BROKEN["add"] = True

    with pytest.raises(StepError) as failed:
        runner.run_step(task.task_id)

    where = failed.value.params["cause_params"]["traceback"]
    head, _, full = where.partition("\n\n")
    assert head.startswith("Your code (") and "frames of libraries left out" in head
    assert "agent.py" in head and "in add" in head and "ValueError: add is broken" in head
    assert "site-packages" not in head and "pydantic_ai" in full
