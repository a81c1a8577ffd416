"""Other frameworks' agents as Stepwise workers: pydantic-ai, OpenAI Agents, LangGraph, LlamaIndex.

An `--agent NAME=TARGET` whose object is one of these frameworks' agents is recognised here
by its type, without importing any framework (the object's class names its module), and
wrapped by that framework's adapter, a `BaseAgentWorker` imported only when used:

- `agent_core.adapters.pydantic_ai`: a pydantic-ai `Agent` (`stepwise[pydantic-ai]`);
- `agent_core.adapters.openai_agents`: an OpenAI Agents SDK `Agent` (`stepwise[openai-agents]`);
- `agent_core.adapters.langgraph`: a compiled LangGraph graph (`stepwise[langgraph]`);
- `agent_core.adapters.llama_index`: a LlamaIndex agent workflow (`FunctionAgent`,
  `ReActAgent`, `AgentWorkflow`; `stepwise[llama-index]`).

Each adapter keeps the framework's own state (its message history, its input list, its
checkpoint, its workflow Context) as JSON in `task.extra_state`, so undo, a restart and
steering work as for the built-in workers.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from agent_core.errors import UserError
from agent_core.extras import require
from agent_core.workers.base import BaseAgentWorker

__all__ = ["FRAMEWORKS", "Framework", "adapt", "framework_of"]


@dataclass(frozen=True)
class Framework:
    """A framework whose agents Stepwise steps, and how its objects are recognised."""

    name: str
    """As the app names it ("pydantic-ai")."""
    extra: str
    """The extra of the `stepwise` distribution that installs it."""
    adapter: str
    """The adapter's module; it defines `worker_for(obj, *, tool_approval) -> BaseAgentWorker`."""
    classes: tuple[tuple[str, str], ...]
    """(module prefix, class name) pairs: an object whose class, or a base of it, matches one
    is this framework's agent."""
    not_runnable: tuple[tuple[str, str, str], ...] = ()
    """(module prefix, class name, advice) for the framework's objects that are not agents
    yet (a LangGraph `StateGraph` before `compile()`)."""


FRAMEWORKS: tuple[Framework, ...] = (
    Framework(
        name="pydantic-ai",
        extra="pydantic-ai",
        adapter="agent_core.adapters.pydantic_ai",
        classes=(("pydantic_ai", "AbstractAgent"), ("pydantic_ai", "Agent")),
    ),
    Framework(
        name="openai-agents",
        extra="openai-agents",
        adapter="agent_core.adapters.openai_agents",
        classes=(("agents.agent", "Agent"),),
    ),
    Framework(
        name="langgraph",
        extra="langgraph",
        adapter="agent_core.adapters.langgraph",
        classes=(("langgraph.pregel", "Pregel"), ("langgraph.graph", "CompiledStateGraph")),
        not_runnable=(
            (
                "langgraph.graph",
                "StateGraph",
                "a StateGraph is a builder: point the target at the compiled graph "
                "(graph = builder.compile()), without a checkpointer of your own",
            ),
        ),
    ),
    Framework(
        name="llama-index",
        extra="llama-index",
        adapter="agent_core.adapters.llama_index",
        classes=(
            ("llama_index.core.agent.workflow", "BaseWorkflowAgent"),
            ("llama_index.core.agent.workflow", "AgentWorkflow"),
        ),
    ),
)


def _matches(obj: Any, pairs: tuple[tuple[str, ...], ...]) -> tuple[str, ...] | None:
    for cls in type(obj).__mro__:
        module = getattr(cls, "__module__", "") or ""
        for pair in pairs:
            prefix, name = pair[0], pair[1]
            if cls.__name__ == name and (module == prefix or module.startswith(prefix + ".")):
                return pair
    return None


def framework_of(obj: Any) -> Framework | None:
    """The framework whose agent `obj` is, or None (nothing is imported to tell).

    Raises:
        UserError: `obj` is one of a framework's objects that is not an agent yet; the
            message says what to point the target at instead.
    """
    for framework in FRAMEWORKS:
        if _matches(obj, framework.classes) is not None:
            return framework
        found = _matches(obj, framework.not_runnable)
        if found is not None:
            raise UserError(f"{type(obj).__name__} is not runnable: {found[2]}")
    return None


def adapt(obj: Any, *, tool_approval: bool = False) -> BaseAgentWorker:
    """`obj`, a framework's agent, as a Stepwise worker.

    Args:
        obj: An object `framework_of` recognises.
        tool_approval: Make every tool call wait for a person's approval, besides those the
            framework itself marks as needing it.

    Raises:
        UserError: `obj` is no framework's agent.
        MissingExtraError: The adapter's extra is not fully installed.
    """
    framework = framework_of(obj)
    if framework is None:
        raise UserError(f"a {type(obj).__name__} is not an agent of any framework Stepwise wraps")
    require(framework.extra, feature=f"a {framework.name} agent")
    module = importlib.import_module(framework.adapter)
    return module.worker_for(obj, tool_approval=tool_approval)
