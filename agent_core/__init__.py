"""Stepwise's runtime: run LLM agents one step at a time, with undo, steering and storage.

The API follows LlamaIndex's lower-level agent API (`AgentRunner`, `AgentWorker`, `Task`,
`TaskStep`, `TaskStepOutput`).
"""

from agent_core.agents import FunctionCallingAgent, ReActAgent
from agent_core.breakpoints import AtStep, CostOver, OnTool, RunUntilResult, TokensOver
from agent_core.memory import ChatMemoryBuffer
from agent_core.parallel import ParallelAgentRunner
from agent_core.runner import AgentRunner
from agent_core.step_runs import StepRun
from agent_core.streaming_response import StreamingAgentChatResponse
from agent_core.structured_planner import StructuredPlannerAgent
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
