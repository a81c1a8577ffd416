"""Stepwise's runtime: run LLM agents one step at a time, with undo, steering and storage.

The API follows LlamaIndex's lower-level agent API (`AgentRunner`, `AgentWorker`, `Task`,
`TaskStep`, `TaskStepOutput`).
"""

from agent_core._moved import alias_modules
from agent_core.compat.llamaindex.agents import FunctionCallingAgent, ReActAgent
from agent_core.compat.llamaindex.structured_planner import StructuredPlannerAgent
from agent_core.memory import ChatMemoryBuffer
from agent_core.runtime.breakpoints import AtStep, CostOver, OnTool, RunUntilResult, TokensOver
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

# Public paths from before the runtime became a package (Stepwise 0.1).
alias_modules(
    {
        "agent_core.runner": "agent_core.runtime.runner",
        "agent_core.parallel": "agent_core.runtime.parallel",
        "agent_core.breakpoints": "agent_core.runtime.breakpoints",
        "agent_core.step_runs": "agent_core.runtime.step_runs",
        "agent_core.streaming_response": "agent_core.runtime.streaming_response",
        "agent_core.agents": "agent_core.compat.llamaindex.agents",
        "agent_core.structured_planner": "agent_core.compat.llamaindex.structured_planner",
        "agent_core.pipeline": "agent_core.workers.pipeline",
    }
)

__all__ = [
    "AgentChatResponse",
    "AgentRunner",
    "AgentState",
    "AtStep",
    "ChatMemoryBuffer",
    "CostOver",
    "FunctionCallingAgent",
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
