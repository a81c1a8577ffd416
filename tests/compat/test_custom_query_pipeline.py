"""Test query pipeline worker.

Ported from LlamaIndex (llama-index-core 0.12, `tests/agent/custom/test_query_pipeline.py`)
with every change marked `# stepwise:`. Typing aliases are spelt as builtins, as the linter
asks. Stepwise's `QueryPipelineAgentWorker` runs its own small `Pipeline` (a DAG of named
callables), not LlamaIndex's `QueryPipeline`: the components below are the same functions,
wired by name instead of chained.
"""

from typing import Any

# stepwise: imports from agent_core
from agent_core import AgentChatResponse, AgentRunner
from agent_core.workers import QueryPipelineAgentWorker
from agent_core.workers.pipeline import Pipeline


def mock_fn(a: str) -> str:
    """Mock function."""
    return a + "3"


# stepwise: a component gets the task's input (`task_input`), not the Task, and returns its
# value (LlamaIndex's returned {"a": ...}, a dict of named outputs)
def mock_agent_input_fn(task_input: str, state: dict) -> str:
    """Mock agent input function."""
    if "count" not in state:
        state["count"] = 0
        state["max_count"] = 2
        state["input"] = task_input
    return state["input"]


def mock_agent_output_fn(state: dict, output: str) -> tuple[AgentChatResponse, bool]:
    # stepwise: no task parameter (the function did not use it)
    state["count"] += 1
    state["input"] = output
    is_done = state["count"] >= state["max_count"]
    return AgentChatResponse(response=str(output)), is_done


def mock_agent_input_fn_stateful(state: dict[str, Any]) -> str:
    """Mock agent input function (for StatefulFnComponent)."""
    return mock_agent_input_fn(state["task_input"], state["step_state"])


def mock_agent_output_fn_stateful(
    state: dict[str, Any], output: str
) -> tuple[AgentChatResponse, bool]:
    """Mock agent output function (for StatefulFnComponent)."""
    return mock_agent_output_fn(state["step_state"], output)


class MyCustomAgentComponent:
    """Custom agent component."""

    # stepwise: any callable is a component; LlamaIndex's declared input and output keys
    def __init__(self, separator: str = ":") -> None:
        self.separator = separator

    def __call__(self, a: str) -> str:
        """Run component."""
        return a + self.separator + a


def _chain(agent_input: Any, fn_component: Any, agent_output: Any) -> Pipeline:
    # stepwise: LlamaIndex's QueryPipeline(chain=[input, fn, output]), wired by name
    return (
        Pipeline(args=("task_input", "state"))
        .add("agent_input", agent_input, inputs={"task_input": "task_input", "state": "state"})
        .add("fn_component", fn_component, inputs={"a": "agent_input"})
        .add("agent_output", agent_output, inputs={"state": "state", "output": "fn_component"})
    )


def test_qp_agent_fn() -> None:
    """Test query pipeline agent.

    Implement via function components.

    """
    qp = _chain(mock_agent_input_fn, mock_fn, mock_agent_output_fn)

    agent_worker = QueryPipelineAgentWorker(pipeline=qp)
    agent_runner = AgentRunner(agent_worker=agent_worker)

    # test create_task
    task = agent_runner.create_task("foo")
    assert task.input == "foo"

    step_output = agent_runner.run_step(task.task_id)
    assert str(step_output.output) == "foo3"
    assert step_output.is_last is False

    step_output = agent_runner.run_step(task.task_id)
    assert str(step_output.output) == "foo33"
    assert step_output.is_last is True


async def test_qp_agent_async_fn() -> None:
    """Test query pipeline agent with async function components."""
    qp = _chain(mock_agent_input_fn, mock_fn, mock_agent_output_fn)

    agent_worker = QueryPipelineAgentWorker(pipeline=qp)
    agent_runner = AgentRunner(agent_worker=agent_worker)

    # test create_task
    task = agent_runner.create_task("foo")
    assert task.input == "foo"

    first_step_output = await agent_runner.arun_step(task.task_id)
    assert str(first_step_output.output) == "foo3"
    assert first_step_output.is_last is False

    second_step_output = await agent_runner.arun_step(task.task_id)
    assert str(second_step_output.output) == "foo33"
    assert second_step_output.is_last is True


def test_qp_agent_custom() -> None:
    """Test query pipeline agent.

    Implement via `AgentCustomQueryComponent` subclass.

    """
    qp = _chain(mock_agent_input_fn, MyCustomAgentComponent(separator="/"), mock_agent_output_fn)

    agent_worker = QueryPipelineAgentWorker(pipeline=qp)
    agent_runner = AgentRunner(agent_worker=agent_worker)

    # test create_task
    task = agent_runner.create_task("foo")
    assert task.input == "foo"

    step_output = agent_runner.run_step(task.task_id)
    assert str(step_output.output) == "foo/foo"
    assert step_output.is_last is False

    step_output = agent_runner.run_step(task.task_id)
    assert str(step_output.output) == "foo/foo/foo/foo"
    assert step_output.is_last is True


def test_qp_agent_stateful_fn() -> None:
    """Test query pipeline agent with stateful components.

    The old flows of using `AgentInputComponent` and `AgentFnComponent` are deprecated.

    """

    # stepwise: a stateful component takes one state dict; this one carries the task's input
    # and the step state, as LlamaIndex's StatefulFnComponent's did
    def stateful(fn: Any) -> Any:
        return lambda task_input, state, output=None: (
            fn({"task_input": task_input, "step_state": state})
            if output is None
            else fn({"task_input": task_input, "step_state": state}, output)
        )

    qp = (
        Pipeline(args=("task_input", "state"))
        .add(
            "agent_input",
            stateful(mock_agent_input_fn_stateful),
            inputs={"task_input": "task_input", "state": "state"},
        )
        .add("fn_component", mock_fn, inputs={"a": "agent_input"})
        .add(
            "agent_output",
            stateful(mock_agent_output_fn_stateful),
            inputs={"task_input": "task_input", "state": "state", "output": "fn_component"},
        )
    )

    agent_worker = QueryPipelineAgentWorker(pipeline=qp)
    agent_runner = AgentRunner(agent_worker=agent_worker)

    # test create_task
    task = agent_runner.create_task("foo")
    assert task.input == "foo"

    step_output = agent_runner.run_step(task.task_id)
    assert str(step_output.output) == "foo3"
    assert step_output.is_last is False

    step_output = agent_runner.run_step(task.task_id)
    assert str(step_output.output) == "foo33"
    assert step_output.is_last is True
