"""LLM protocol, messages, and the models that need no provider."""

from agent_core.llms.base import (
    LLM,
    ChatMessage,
    ChatResponse,
    ChatStreamEvent,
    ToolCall,
    ToolSpec,
    Usage,
)
from agent_core.llms.scripted import FunctionLLM, ScriptedLLM

__all__ = [
    "LLM",
    "ChatMessage",
    "ChatResponse",
    "ChatStreamEvent",
    "FunctionLLM",
    "ScriptedLLM",
    "ToolCall",
    "ToolSpec",
    "Usage",
]
