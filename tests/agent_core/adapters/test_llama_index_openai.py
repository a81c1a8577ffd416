"""A LlamaIndex `FunctionAgent` on llama-index-llms-openai's `OpenAI`, against the loopback server.

llama-index-llms-openai pins openai<3 beside our openai>=3.50, so it is in no extra and the lock
leaves it out; install it on its own to run this (`uv pip install llama-index-llms-openai`, then
put openai back at the lock's version): it works with openai 3.x.
"""

from __future__ import annotations

import pytest

from agent_core import AgentRunner
from agent_core.adapters import adapt
from agent_core.types import StepKind
from tests.llm_servers import OpenAIServer, Reply, ReplyToolCall, openai_server_fixture  # noqa: F401

openai_llm = pytest.importorskip("llama_index.llms.openai")


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_a_function_agent_with_two_tools_on_the_loopback_server(openai_server: OpenAIServer):
    from llama_index.core.agent.workflow import FunctionAgent

    openai_server.script(
        Reply(tool_calls=[ReplyToolCall("multiply", {"a": 121, "b": 3})]),
        Reply(tool_calls=[ReplyToolCall("add", {"a": 363, "b": 42})]),
        Reply(text="The answer is 405."),
    )
    llm = openai_llm.OpenAI(model="gpt-4o-mini", api_base=openai_server.url + "/v1", api_key="t")
    runner = AgentRunner(adapt(FunctionAgent(tools=[multiply, add], llm=llm)))
    task = runner.create_task("What is (121 * 3) + 42?")
    outputs = [runner.run_step(task.task_id) for _ in range(5)]
    assert [(o.task_step.kind, o.task_step.name) for o in outputs] == [
        (StepKind.LLM, "model call"),
        (StepKind.TOOL, "multiply"),
        (StepKind.LLM, "model call"),
        (StepKind.TOOL, "add"),
        (StepKind.LLM, "model call"),
    ]
    assert [o.tool_calls[0].content for o in (outputs[1], outputs[3])] == ["363", "405"]
    assert outputs[-1].is_last and outputs[-1].output == "The answer is 405."
    assert len(openai_server.model_requests) == 3  # One request per model-call step.
