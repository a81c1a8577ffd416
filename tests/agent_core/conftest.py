"""Shared pieces for runtime tests: the seed's arithmetic tools, a ReAct agent on them, Ctrl-C."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator

import pytest

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker

CALLS: list[tuple[str, int, int]] = []


def multiply(a: int, b: int) -> int:
    """Multiply two integers and return the result."""
    CALLS.append(("multiply", a, b))
    return a * b


def add(a: int, b: int) -> int:
    """Add two integers and return the result."""
    CALLS.append(("add", a, b))
    return a + b


def action(tool: str, args: str, thought: str = "I need a tool.") -> str:
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {args}"


def answer(text: str) -> str:
    return f"Thought: I can answer without using any more tools.\nAnswer: {text}"


SEED_REPLIES = [
    action("multiply", '{"a": 121, "b": 3}'),
    action("add", '{"a": 363, "b": 42}'),
    answer("405"),
]

MakeAgent = Callable[..., tuple[AgentRunner, ScriptedLLM]]


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


@pytest.fixture
def tools() -> list[FunctionTool]:
    return [FunctionTool.from_defaults(fn=multiply), FunctionTool.from_defaults(fn=add)]


@pytest.fixture
def make_agent(tools: list[FunctionTool]) -> MakeAgent:
    def make(replies=SEED_REPLIES, *, runner=AgentRunner, worker_kwargs=None, **kwargs):
        llm = ScriptedLLM(list(replies))
        worker = ReActAgentWorker.from_tools(tools, llm=llm, **(worker_kwargs or {}))
        return runner(worker, **kwargs), llm

    return make


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """Python's own Ctrl-C handler, even where SIGINT is ignored (a CI job in the background)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
