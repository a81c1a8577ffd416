"""Bad input never crashes: arbitrary tool arguments, model text, plans and edited step inputs.

The parsers' own properties live in tests/agent_core/test_react_format.py and
test_plan_parsing.py. Here the same kind of input goes through the code a user meets:
`FunctionTool.acall`, and real worker steps run by a runner whose store serialises every
record as SQLite does. Each input yields a typed result (a `ToolOutput`, an observation, an
answer, a plan) or a typed error recorded on its step (`StepError`, `PlanError`, whose cause is
one of the runtime's own errors) — never another exception, never a step left `running`.
"""

from __future__ import annotations

import asyncio
import json
import math
from enum import Enum
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

from agent_core import AgentRunner, ParallelAgentRunner, StepKind, StepStatus, TaskState, ToolOutput
from agent_core.errors import AgentCoreError, StepError, ToolError, UserError
from agent_core.llms import ChatMessage, FunctionLLM, ScriptedLLM
from agent_core.llms.base import RAW_TOOL_ARGUMENTS, ChatResponse, ToolCall
from agent_core.store import InMemoryStore
from agent_core.tools import FunctionTool
from agent_core.tools.arithmetic import arithmetic_tools
from agent_core.tools.workspace import Workspace
from agent_core.types import TaskStepOutput
from agent_core.workers import (
    FunctionCallingAgentWorker,
    PlanError,
    PlannerAgentWorker,
    ReActAgentWorker,
)
from agent_core.workers.react_format import ReActAction, ReActParseError, parse_react_output
from agent_core.workers.subagents import sub_agents

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------ strategies

json_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**30, max_value=10**400)  # past any int64
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    json_leaves,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)
"""Values a model's JSON can hold."""

python_values = st.recursive(
    json_leaves
    | st.floats()  # NaN and infinities: Python's json.loads accepts them
    | st.binary(max_size=4)
    | st.complex_numbers()
    | st.just(...),
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children, children)
        | st.frozensets(st.integers() | st.text(max_size=3), max_size=3)
        | st.dictionaries(st.integers() | st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=12,
)
"""Values only Python literals can hold, as `ast.literal_eval` of a model's reply gives."""


def arg_dicts(names: list[str], values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from([*names, RAW_TOOL_ARGUMENTS]) | st.text(max_size=8)
    return st.dictionaries(keys, values, max_size=6)


# ------------------------------------------------------------------ tools under test


class Point(BaseModel):
    x: int
    y: int = 0


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


def scale(x: float, factor: int = 2, label: str = "x") -> str:
    """Scale a number."""
    return f"{label}={x * factor}"


async def pick(names: list[str], limit: int | None = None, mode: Literal["all", "any"] = "all"):
    """Pick names (async)."""
    return {"names": names[:limit], "mode": mode}


def place(point: Point, colour: Colour = Colour.RED, flags: dict[str, bool] | None = None) -> str:
    """Place a point."""
    return f"{point.x},{point.y} {colour.value} {sorted(flags or {})}"


def reserved(_hidden: int, model_name: str = "m", /, schema: str = "s") -> str:
    """Names pydantic reserves, and a positional-only one."""
    return f"{_hidden} {model_name} {schema}"


def moody(n: int) -> int:
    """Raise for odd and negative numbers."""
    if n < 0:
        raise ToolError("n must not be negative")
    if n % 2:
        raise ValueError(f"odd: {n}")
    return n // 2


TOOLS = [
    FunctionTool.from_defaults(scale),
    FunctionTool.from_defaults(pick),
    FunctionTool.from_defaults(place),
    FunctionTool.from_defaults(reserved, blocking=False),
    FunctionTool.from_defaults(moody),
]
NAMES = ["x", "factor", "label", "names", "limit", "mode", "point", "colour", "flags"]
NAMES += ["_hidden", "model_name", "schema", "n"]


def call(tool: FunctionTool, args: Any) -> ToolOutput:
    return asyncio.run(tool.acall(args, call_id="c1"))


def _check_tool_output(tool: FunctionTool, args: Any, output: ToolOutput) -> None:
    assert isinstance(output, ToolOutput)
    assert (output.tool_name, output.call_id) == (tool.name, "c1")
    if output.is_error:
        assert output.content.startswith("Error"), output.content
        assert tool.name in output.content
        return
    # A call that ran got exactly the arguments the schema made of `args`: `args_used` when
    # that differs from what the model wrote (`args`).
    validated = tool.metadata.fn_schema.model_validate(args)
    used = output.args_used if output.args_used is not None else output.args
    assert used == validated.model_dump(mode="json", by_alias=True)


# ------------------------------------------------------------------ FunctionTool.acall


@PROPERTY
@given(st.sampled_from(TOOLS), arg_dicts(NAMES, json_values))
def test_any_json_arguments_give_a_storable_tool_output(tool: FunctionTool, args: dict) -> None:
    output = call(tool, args)
    _check_tool_output(tool, args, output)
    stored = ToolOutput.model_validate_json(output.model_dump_json())
    assert stored == output, "a tool output must survive the store unchanged"


@PROPERTY
@given(
    st.sampled_from(TOOLS),
    arg_dicts(NAMES, python_values) | python_values.filter(lambda v: not isinstance(v, dict)),
)
def test_any_python_value_as_arguments_gives_a_tool_output(tool: FunctionTool, args: Any) -> None:
    output = call(tool, args)
    _check_tool_output(tool, args, output)


def test_arguments_with_non_text_keys_give_an_error_output() -> None:
    output = call(TOOLS[0], {0: None})
    assert output.is_error and "scale" in output.content


def test_well_typed_arguments_run_the_tool() -> None:
    assert call(TOOLS[0], {"x": 1.5, "factor": 3}).content == "x=4.5"
    assert call(TOOLS[2], {"point": {"x": 1}, "colour": "blue"}).content == "1,0 blue []"
    assert call(TOOLS[3], {"_hidden": 7, "schema": "t"}).content == "7 m t"
    assert call(TOOLS[4], {"n": 3}).content == "Error: moody raised ValueError: odd: 3"


# ------------------------------------------------------------------ ReAct steps

REACT_FRAGMENTS = [
    "Thought: ",
    "Action: ",
    "Action Input: ",
    "Answer: ",
    "add",
    "multiply",
    "nope",
    "\n",
    " ",
    "{",
    "}",
    '"a"',
    "'b'",
    ": ",
    ", ",
    "1",
    "-2.5e3",
    "null",
    "None",
    "True",
    "[",
    "]",
    "(",
    ")",
    "...",
    "\\",
    '"',
    "é",
    "\x00",
    '{"a": 2, "b": 3}',
]
react_texts = st.text() | st.lists(
    st.sampled_from(REACT_FRAGMENTS) | st.text(max_size=8), max_size=25
).map("".join)


def _storable_action(text: str) -> bool:
    """False for an Action Input holding a Python-only value (`...`): a known bug, below."""
    try:
        parsed = parse_react_output(text)
    except ReActParseError:
        return True
    if not isinstance(parsed, ReActAction):
        return True
    try:
        ToolOutput(tool_name="t", args=parsed.args).model_dump_json()
    except PydanticSerializationError:
        return False
    return True


def _reload(runner: AgentRunner, task_id: str) -> TaskState:
    """The task as a fresh runner on the same store sees it."""
    return AgentRunner(runner.agent_worker, store=runner.store).get_task_state(task_id)


def _react_runner(reply: str, *, approval: bool) -> tuple[AgentRunner, str]:
    worker = ReActAgentWorker(arithmetic_tools(), ScriptedLLM([reply]), tool_approval=approval)
    runner = AgentRunner(worker, store=InMemoryStore())
    return runner, runner.create_task("What is 2 + 3?").task_id


@PROPERTY
@given(react_texts, st.booleans())
def test_any_model_text_becomes_an_answer_or_an_observation(text: str, approval: bool) -> None:
    assume(_storable_action(text))
    runner, task_id = _react_runner(text, approval=approval)
    output = runner.run_step(task_id)  # Never fails: the model can fix what it wrote.
    state = _reload(runner, task_id)
    messages = state.task.memory.get_all()
    assert messages[1] == ChatMessage(role="assistant", content=text)
    if output.is_last:
        assert not state.queue
        return
    [next_step] = state.step_queue
    if next_step.kind is StepKind.TOOL:  # Awaiting approval: approving it runs the call.
        assert approval and next_step.needs_approval
        tool_output = runner.run_step(task_id)
        [result] = tool_output.tool_calls
        assert (
            _reload(runner, task_id).task.memory.get_all()[-1].content.startswith("Observation: ")
        )
        assert isinstance(result, ToolOutput)
        return
    assert messages[-1].role == "user" and messages[-1].content.startswith("Observation: ")


def test_a_python_only_value_in_action_input_becomes_an_observation() -> None:
    reply = 'Thought: add them.\nAction: add\nAction Input: {"a": ..., "b": 1}'
    runner, task_id = _react_runner(reply, approval=False)
    assert not runner.run_step(task_id).is_last
    observation = _reload(runner, task_id).task.memory.get_all()[-1].content
    assert observation.startswith("Observation: Error")


# ------------------------------------------------------------------ native tool calls

tool_names = st.sampled_from(["add", "multiply", "divide", "nope"]) | st.text(max_size=6)
tool_calls = st.lists(
    st.tuples(tool_names, arg_dicts(["a", "b"], json_values)), min_size=1, max_size=3
)


@PROPERTY
@given(tool_calls, st.text(max_size=20))
def test_any_native_tool_calls_run_as_tool_steps_that_never_fail(
    calls: list[tuple[str, dict]], text: str
) -> None:
    message = ChatMessage(
        role="assistant",
        content=text,
        tool_calls=tuple(ToolCall(id=f"c{i}", name=n, args=a) for i, (n, a) in enumerate(calls)),
    )
    llm = ScriptedLLM([ChatResponse(message=message)])
    runner = ParallelAgentRunner(
        FunctionCallingAgentWorker(arithmetic_tools(), llm), store=InMemoryStore()
    )
    task_id = runner.create_task("Compute.").task_id
    runner.run_step(task_id)
    outputs = runner.run_steps_in_queue(task_id)  # Every call, at once.
    assert len(outputs) == len(calls)
    state = _reload(runner, task_id)
    answered = {m.tool_call_id for m in state.task.memory.get_all() if m.role == "tool"}
    assert answered == {f"c{i}" for i in range(len(calls))}
    [follow_up] = state.step_queue
    assert state.is_ready(follow_up)


# ------------------------------------------------------------------ plan steps

AGENTS = ["code", "file", "image"]
PLAN_FRAGMENTS = ['{"plan": [', "]}", '{"id": "a", ', '"agent": "file", ', '"agent": "x", ']
PLAN_FRAGMENTS += ['"prompt": "p"', ', "depends_on": ["a"]', "}", ", ", "```json\n", "```"]
plan_texts = (
    st.text()
    | st.lists(st.sampled_from(PLAN_FRAGMENTS) | st.text(max_size=4), max_size=20).map("".join)
    | json_values.map(json.dumps)
)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("ws"))


def _planner(workspace: Workspace, reply: str) -> tuple[AgentRunner, str]:
    llm = FunctionLLM(lambda messages, tools: reply)
    worker = PlannerAgentWorker(llm, sub_agents(AGENTS, llm, workspace))
    runner = AgentRunner(worker, store=InMemoryStore())
    return runner, runner.create_task("Write and draw.").task_id


def _check_plan_outcome(runner: AgentRunner, task_id: str, step_input: Any, raw: str) -> None:
    step_id = runner.get_upcoming_steps(task_id)[0].step_id
    try:
        output = runner.run_step(task_id, input=step_input)
    except PlanError as exc:
        assert exc.raw_text == raw and exc.problems
        step = _reload(runner, task_id).steps[step_id]
        assert step.status is StepStatus.FAILED
        assert step.error and step.error.startswith("the plan is invalid")
        assert not _reload(runner, task_id).task.memory.get_all(), "a failed plan wrote memory"
        return
    items = output.output["plan"]
    queued = _reload(runner, task_id).step_queue
    assert [s.kind for s in queued] == [StepKind.DELEGATE] * len(items) + [StepKind.FINALIZE]
    assert {s.step_state["item"] for s in queued[:-1]} == {i["id"] for i in items}


@PROPERTY
@given(plan_texts)
def test_any_model_text_for_a_plan_gives_a_plan_or_a_recorded_plan_error(
    workspace: Workspace, text: str
) -> None:
    runner, task_id = _planner(workspace, text)
    _check_plan_outcome(runner, task_id, None, text)


@PROPERTY
@given(json_values.filter(lambda v: not isinstance(v, str)))
def test_any_plan_a_person_types_gives_a_plan_or_a_recorded_plan_error(
    workspace: Workspace, value: Any
) -> None:
    runner, task_id = _planner(workspace, "unused")
    step_input = {"plan": value} if not isinstance(value, dict) else value
    raw = json.dumps(step_input, ensure_ascii=False, default=str)
    _check_plan_outcome(runner, task_id, step_input, raw)


def test_an_invalid_plan_with_a_lone_surrogate_is_a_recorded_plan_error(
    workspace: Workspace,
) -> None:
    text = json.loads('"I cannot plan this \\ud800"')
    runner, task_id = _planner(workspace, text)
    step_id = runner.get_upcoming_steps(task_id)[0].step_id
    with pytest.raises(PlanError):
        runner.run_step(task_id)
    step = _reload(runner, task_id).steps[step_id]
    assert step.status is StepStatus.FAILED
    assert step.error and step.error.startswith("the plan is invalid")


# ------------------------------------------------------------------ edited step inputs

step_inputs = (
    json_values
    | st.text()
    | st.dictionaries(
        st.sampled_from(["tool", "args", "call_id", "rejected", "item", "agent", "prompt"]),
        json_values,
        max_size=4,
    )
)


def _run_edited(runner: AgentRunner, task_id: str, step_id: str, value: Any) -> None:
    """Run a step with a person's input: it completes, or fails typed and recorded."""
    try:
        output = runner.run_step(task_id, step_id=step_id, input=value)
    except StepError as exc:
        assert isinstance(exc.__cause__, AgentCoreError), f"untyped failure: {exc!r}"
        step = _reload(runner, task_id).steps[step_id]
        assert step.status is StepStatus.FAILED and step.error
        return
    except UserError:  # Refused before running (not a str, dict or None): nothing changed.
        assert not isinstance(value, str | dict | None)
        assert _reload(runner, task_id).steps[step_id].status is StepStatus.UPCOMING
        return
    assert isinstance(output, TaskStepOutput)
    assert _reload(runner, task_id).steps[step_id].status is StepStatus.COMPLETED


@PROPERTY
@given(step_inputs)
def test_any_edit_of_a_tool_call_awaiting_approval_is_run_or_refused_typed(value: Any) -> None:
    reply = 'Thought: add.\nAction: add\nAction Input: {"a": 2, "b": 3}'
    runner, task_id = _react_runner(reply, approval=True)
    runner.run_step(task_id)
    [tool_step] = runner.get_upcoming_steps(task_id)
    _run_edited(runner, task_id, tool_step.step_id, value)


@PROPERTY
@given(step_inputs)
def test_any_edit_of_a_delegate_step_is_run_or_refused_typed(
    workspace: Workspace, value: Any
) -> None:
    plan = {"plan": [{"id": "a", "agent": "file", "prompt": "Write."}]}
    runner, task_id = _planner(workspace, "Thought: done.\nAnswer: written")
    runner.run_step(task_id, input=plan)
    delegate = runner.get_upcoming_steps(task_id)[0]
    assert delegate.kind is StepKind.DELEGATE
    _run_edited(runner, task_id, delegate.step_id, value)


def test_nan_from_a_models_json_is_stored_as_null_not_a_crash() -> None:
    output = call(TOOLS[0], {"x": math.nan})
    assert not output.is_error and output.content == "x=nan"
    assert json.loads(output.model_dump_json())["args"]["x"] is None
