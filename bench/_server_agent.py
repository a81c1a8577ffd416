"""The agent `bench.server_speed` serves: ReAct calling `add` forever on an instant model.

Registered with `stepwise serve --agent bench_adder=bench/_server_agent.py:build_agent`, as a
user registers their own agent, so the benchmark goes through the real registry.
"""

from __future__ import annotations

from agent_core.llms import FunctionLLM
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker

ACTION = 'Thought: again.\nAction: add\nAction Input: {"a": 1, "b": 2}'


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def build_agent() -> ReActAgentWorker:
    """An agent that never finishes: every step is one model call and one tool call."""
    llm = FunctionLLM(lambda messages, tools: ACTION)
    return ReActAgentWorker([FunctionTool.from_defaults(add)], llm, max_iterations=1_000_000)
