"""Function calling worker step tests.

Ported from LlamaIndex (llama-index-core 0.12, `tests/agent/function_calling/test_step.py`) by
changing imports and the least spelling possible; every change is marked `# stepwise:`.
Typing aliases (`List[...]`, `Optional[...]`) are spelt as builtins, as the linter asks.
"""

import asyncio  # stepwise: for asyncio.to_thread below
import uuid

import pytest

# stepwise: imports from agent_core
from agent_core import Task, TaskStepOutput
from agent_core.llms import ChatMessage, ChatResponse, FunctionLLM, ToolCall
from agent_core.memory import ChatMemoryBuffer
from agent_core.tools import FunctionTool
from agent_core.types import StepKind
from agent_core.workers.function_calling import (
    FunctionCallingAgentWorker,
    build_missing_tool_message,
    build_missing_tool_output,
    get_function_by_name,
)

NONEXISTENT_TOOL_ID = "NonexistentToolID"
NONEXISTENT_TOOL_NAME = "NonexistentToolName"
NONEXISTENT_TOOL_ERR_MSG = build_missing_tool_message(NONEXISTENT_TOOL_NAME)
# stepwise: LlamaIndex's ToolSelection is the model's ToolCall
NONEXISTENT_TOOL_SELECTION = ToolCall(id=NONEXISTENT_TOOL_ID, name=NONEXISTENT_TOOL_NAME, args={})

# stepwise: tool names are provider-safe (no spaces), tools are built by from_defaults
TOOL_1_NAME = "Tool_1"
TOOL_1 = FunctionTool.from_defaults(lambda: None, name=TOOL_1_NAME, description="")
TOOL_1_SELECTION = ToolCall(id=TOOL_1_NAME, name=TOOL_1_NAME, args={})

TOOL_2_NAME = "Tool_2"
TOOL_2 = FunctionTool.from_defaults(lambda x: None, name=TOOL_2_NAME, description="")

# stepwise: defined after TOOL_1, since Stepwise's message names the tools there are
NONEXISTENT_TOOL_OUTPUT = build_missing_tool_output(NONEXISTENT_TOOL_SELECTION, [TOOL_1])


# stepwise: LlamaIndex's MockFunctionCallingLLM (a FunctionCallingLLM subclass whose every
# reply selects one tool) is a FunctionLLM whose every reply calls one tool
def MockFunctionCallingLLM(use_nonexistent_tool: bool = False) -> FunctionLLM:
    call = NONEXISTENT_TOOL_SELECTION if use_nonexistent_tool else TOOL_1_SELECTION
    message = ChatMessage(role="assistant", content="", tool_calls=(call,))
    return FunctionLLM(lambda messages, tools: ChatResponse(message=message))


@pytest.fixture()
def agent_worker() -> FunctionCallingAgentWorker:
    llm = MockFunctionCallingLLM(use_nonexistent_tool=False)
    return FunctionCallingAgentWorker([TOOL_1], llm, [])


@pytest.fixture()
def missing_function_agent_worker() -> FunctionCallingAgentWorker:
    llm = MockFunctionCallingLLM(use_nonexistent_tool=True)
    return FunctionCallingAgentWorker([TOOL_1], llm, [])


def test_get_function_by_name_finds_existing_tool() -> None:
    tools = [TOOL_1, TOOL_2]
    assert get_function_by_name(tools, TOOL_1.metadata.name) == TOOL_1
    assert get_function_by_name(tools, TOOL_1.metadata.name) == TOOL_1


def test_get_function_by_name_returns_none_for_nonexistent_tool() -> None:
    assert get_function_by_name([TOOL_1], "Name of a Nonexistent Tool") is None
    assert get_function_by_name([], "Name of a Nonexistent Tool") is None


def _tool_step_output(worker, output: TaskStepOutput, task: Task) -> TaskStepOutput:
    # stepwise: kept difference, see README: a tool call is its own `tool` step, queued by
    # the reasoning step (with the reasoning step that reads its result), so the call's
    # output is that step's
    tool_steps = [s for s in output.next_steps if s.kind is StepKind.TOOL]
    assert len(tool_steps) == 1
    return worker.run_step(tool_steps[0], task)


def test_run_step_returns_message_if_function_not_found(
    missing_function_agent_worker: FunctionCallingAgentWorker,
) -> None:
    task = Task(input="", memory=ChatMemoryBuffer.from_defaults(), extra_state={})
    step = missing_function_agent_worker.initialize_step(task)
    output: TaskStepOutput = missing_function_agent_worker.run_step(step, task)
    # stepwise: the sources are the tool step's calls (see _tool_step_output)
    tool_output = _tool_step_output(missing_function_agent_worker, output, task)

    assert not output.is_last
    assert len(output.next_steps) == 2  # stepwise: the tool step, then the next reasoning
    assert len(tool_output.tool_calls) == 1
    assert tool_output.tool_calls[0] == NONEXISTENT_TOOL_OUTPUT


@pytest.mark.asyncio
async def test_arun_step_returns_message_if_function_not_found(
    missing_function_agent_worker: FunctionCallingAgentWorker,
) -> None:
    task = Task(input="", memory=ChatMemoryBuffer.from_defaults(), extra_state={})
    step = missing_function_agent_worker.initialize_step(task)
    output: TaskStepOutput = await missing_function_agent_worker.arun_step(step, task)
    tool_steps = [s for s in output.next_steps if s.kind is StepKind.TOOL]  # stepwise: above
    tool_output = await missing_function_agent_worker.arun_step(tool_steps[0], task)

    assert not output.is_last
    assert len(output.next_steps) == 2  # stepwise: the tool step, then the next reasoning
    assert len(tool_output.tool_calls) == 1
    assert tool_output.tool_calls[0] == NONEXISTENT_TOOL_OUTPUT


@pytest.mark.asyncio
@pytest.mark.parametrize("method", ["run_step", "arun_step"])
async def test_run_step_returns_correct_sources_history(
    method: str,
    agent_worker: FunctionCallingAgentWorker,
) -> None:
    num_steps = 4
    task = Task(input="", memory=ChatMemoryBuffer.from_defaults(), extra_state={})
    step_outputs: list[TaskStepOutput] = []

    # Create steps
    steps = [agent_worker.initialize_step(task)]
    for _step_idx in range(num_steps - 1):
        steps.append(
            steps[-1].get_next_step(
                step_id=str(uuid.uuid4()),
                input=None,
            )
        )

    # Run each step, invoking a single tool call each time
    for step_idx in range(num_steps):
        step_outputs.append(
            # stepwise: the sync twin refuses to run inside a live event loop (this test's);
            # it runs in a thread here
            await asyncio.to_thread(agent_worker.run_step, steps[step_idx], task)
            if method == "run_step"
            else await agent_worker.arun_step(steps[step_idx], task)
        )

    # Ensure that each step only has one source for its one tool call
    for step_idx in range(num_steps):
        # stepwise: each step queues one tool step for its one call (see _tool_step_output)
        tool_steps = [s for s in step_outputs[step_idx].next_steps if s.kind is StepKind.TOOL]
        assert len(tool_steps) == 1
