"""LangGraph anchor: the scripted ReAct trajectory through `create_react_agent`.

The agent runs with its in-memory checkpointer (`InMemorySaver`), so every superstep is
checkpointed as in a resumable deployment. One task is K LLM-node + tool-node pairs and then a
final LLM call: K + 1 steps. The clock covers the whole `invoke`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from importlib.metadata import version
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import create_react_agent

FRAMEWORK = "langgraph"
VERSION = f"langgraph=={version('langgraph')}"


class ScriptedToolChatModel(GenericFakeChatModel):
    """A zero-latency fake chat model that accepts `bind_tools` and ignores the tools."""

    def bind_tools(
        self, tools: Sequence[dict[str, Any] | type | Callable | BaseTool], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Return the model itself: the replies are scripted, so the tool schemas are unused."""
        return self


def _script(k: int) -> list[AIMessage]:
    tool_turns = [
        AIMessage(content="", tool_calls=[{"name": "add", "args": {"a": 1, "b": 2}, "id": f"c{i}"}])
        for i in range(k)
    ]
    return [*tool_turns, AIMessage(content="3")]


def _build_agent(k: int, calls: list[int]) -> CompiledStateGraph:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        calls.append(1)
        return a + b

    model = ScriptedToolChatModel(messages=iter(_script(k)))
    return create_react_agent(model, [add], checkpointer=InMemorySaver())


def run_task(k: int) -> int:
    """Run one task of K tool rounds and return the `invoke` time in nanoseconds.

    Raises:
        AssertionError: If the tool did not run K times or the answer is not the scripted one.
    """
    calls: list[int] = []
    agent = _build_agent(k, calls)
    # Each round is two supersteps (model, tools); the default limit of 25 would stop K = 100.
    config: RunnableConfig = {"configurable": {"thread_id": "bench"}, "recursion_limit": 2 * k + 10}
    start = time.perf_counter_ns()
    result = agent.invoke({"messages": [("user", "What is 1 + 2?")]}, config)
    elapsed = time.perf_counter_ns() - start
    messages: list[BaseMessage] = result["messages"]
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert len(calls) == k, f"add ran {len(calls)} times, expected {k}"
    assert len(tool_messages) == k, f"{len(tool_messages)} tool results, expected {k}"
    assert messages[-1].content == "3", f"unexpected final answer {messages[-1].content!r}"
    return elapsed
