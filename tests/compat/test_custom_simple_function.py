"""Test simple function agent.

Ported from LlamaIndex (llama-index-core 0.12, `tests/agent/custom/test_simple_function.py`)
by changing imports and the least spelling possible; every change is marked `# stepwise:`.
Typing aliases (`List[...]`, `Optional[...]`) are spelt as builtins, as the linter asks.
"""

from typing import Any

import pytest

from agent_core.errors import StepError, UserError  # stepwise: typed errors
from agent_core.workers import FnAgentWorker  # stepwise: import


def mock_foo_fn_no_state_param() -> tuple[None, bool]:
    """Mock agent input function without a state."""
    return None, True


def mock_foo_fn(state: dict) -> tuple[dict[str, Any], bool]:
    """Mock agent input function."""
    if "max_count" not in state:
        raise ValueError("max_count must be specified.")

    if "input" not in state:
        state["input"] = state["__task__"].input
        state["count"] = 0
        is_done = False
    else:
        state["input"] = state["input"] + ":foo"
        state["count"] += 1
        is_done = state["count"] >= state["max_count"]

    state["__output__"] = state["input"]

    return state, is_done


async def async_mock_foo_fn(state: dict) -> tuple[dict[str, Any], bool]:
    """Mock async agent input function."""
    return mock_foo_fn(state)


def test_fn_agent() -> None:
    """Test function agent."""
    agent = FnAgentWorker(fn=mock_foo_fn, initial_state={"max_count": 5}).as_agent()
    response = agent.query("hello")
    assert str(response) == "hello:foo:foo:foo:foo:foo"

    # stepwise: kept difference, see README: the fn's ValueError fails the step, which is
    # recorded as failed and raised as a StepError (its cause names the ValueError)
    with pytest.raises(StepError, match="ValueError: max_count must be specified"):
        agent = FnAgentWorker(fn=mock_foo_fn).as_agent()
        response = agent.query("hello")


def test_fn_agent_init() -> None:
    """Test function agent init."""
    # stepwise: kept difference, see README: a typed UserError (not a ValueError) that names
    # the worker, not LlamaIndex's StatefulFnComponent
    with pytest.raises(UserError) as error_info:
        FnAgentWorker(fn=mock_foo_fn_no_state_param).as_agent()

    assert str(error_info.value).startswith("FnAgentWorker's fn must take a 'state' parameter")


@pytest.mark.asyncio()
async def test_run_async_step() -> None:
    """Test run async step."""
    agent_without_async_fn = FnAgentWorker(
        # stepwise: `asnc_fn=None` in LlamaIndex's test, a typo its pydantic model ignored;
        # Stepwise refuses unknown keywords
        fn=mock_foo_fn,
        async_fn=None,
        initial_state={"max_count": 5},
    ).as_agent()

    response = await agent_without_async_fn.aquery("hello")
    assert str(response) == "hello:foo:foo:foo:foo:foo"

    agent_with_async_fn = FnAgentWorker(
        fn=mock_foo_fn, async_fn=async_mock_foo_fn, initial_state={"max_count": 5}
    ).as_agent()

    response = await agent_with_async_fn.aquery("hello")
    assert str(response) == "hello:foo:foo:foo:foo:foo"
