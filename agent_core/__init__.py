"""Stepwise's runtime: run LLM agents one step at a time, with undo, steering and storage.

The API follows LlamaIndex's lower-level agent API (`AgentRunner`, `AgentWorker`, `Task`,
`TaskStep`, `TaskStepOutput`).

The public names load on first use (PEP 562), so importing a submodule never runs the runtime's
imports through this package: a page or thread whose import of the runner is cut short leaves
nothing half-made here for the next import to trip on, and `import agent_core` costs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_core import _moved

if TYPE_CHECKING:
    from agent_core.compat.llamaindex.agents import FunctionCallingAgent, ReActAgent
    from agent_core.compat.llamaindex.structured_planner import StructuredPlannerAgent
    from agent_core.memory import ChatMemoryBuffer
    from agent_core.runtime.breakpoints import (
        AtStep,
        CostOver,
        OnNode,
        OnTool,
        RunUntilResult,
        TokensOver,
    )
    from agent_core.runtime.parallel import ParallelAgentRunner
    from agent_core.runtime.runner import AgentRunner
    from agent_core.runtime.step_runs import StepRun
    from agent_core.runtime.streaming_response import StreamingAgentChatResponse
    from agent_core.types import (
        AgentChatResponse,
        AgentState,
        StepKind,
        StepStatus,
        Task,
        TaskState,
        TaskStatus,
        TaskStep,
        TaskStepOutput,
        ToolOutput,
    )

_HOMES = {
    "agent_core.compat.llamaindex.agents": ("FunctionCallingAgent", "ReActAgent"),
    "agent_core.compat.llamaindex.structured_planner": ("StructuredPlannerAgent",),
    "agent_core.memory": ("ChatMemoryBuffer",),
    "agent_core.runtime.breakpoints": (
        "AtStep",
        "CostOver",
        "OnNode",
        "OnTool",
        "RunUntilResult",
        "TokensOver",
    ),
    "agent_core.runtime.parallel": ("ParallelAgentRunner",),
    "agent_core.runtime.runner": ("AgentRunner",),
    "agent_core.runtime.step_runs": ("StepRun",),
    "agent_core.runtime.streaming_response": ("StreamingAgentChatResponse",),
    "agent_core.types": (
        "AgentChatResponse",
        "AgentState",
        "StepKind",
        "StepStatus",
        "Task",
        "TaskState",
        "TaskStatus",
        "TaskStep",
        "TaskStepOutput",
        "ToolOutput",
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'agent_core' has no attribute {name!r}")
    # LlamaIndex's classes hand `AgentRunner.from_llm` its builder when they load: load them
    # with any public name, as an eager `import agent_core` always did.
    importlib.import_module("agent_core.compat.llamaindex")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


# The old paths of `agent_core`'s modules (`agent_core.runner`, ...): see `_moved._MOVED`.
_moved.install()

__all__ = [
    "AgentChatResponse",
    "AgentRunner",
    "AgentState",
    "AtStep",
    "ChatMemoryBuffer",
    "CostOver",
    "FunctionCallingAgent",
    "OnNode",
    "OnTool",
    "ParallelAgentRunner",
    "ReActAgent",
    "RunUntilResult",
    "StepKind",
    "StepRun",
    "StepStatus",
    "StreamingAgentChatResponse",
    "StructuredPlannerAgent",
    "Task",
    "TaskState",
    "TaskStatus",
    "TaskStep",
    "TaskStepOutput",
    "TokensOver",
    "ToolOutput",
]
