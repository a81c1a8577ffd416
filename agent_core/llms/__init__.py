"""LLM protocol, messages, and the models: scripted ones and the provider adapters.

The provider adapters load their SDK (openai, anthropic) only when first used.
"""

from typing import TYPE_CHECKING, Any

from agent_core.llms.base import (
    LLM,
    RAW_TOOL_ARGUMENTS,
    ChatMessage,
    ChatResponse,
    ChatStreamEvent,
    MessageRole,
    ToolCall,
    ToolSpec,
    Usage,
)
from agent_core.llms.catalog import OPENAI_COMPATIBLE_PRESETS
from agent_core.llms.content import ImagePart, TextPart
from agent_core.llms.pricing import ModelPrice, PriceTable
from agent_core.llms.scripted import FunctionLLM, HumanLLM, ScriptedLLM

if TYPE_CHECKING:
    from agent_core.llms.anthropic import AnthropicLLM
    from agent_core.llms.openai import OpenAILLM

__all__ = [
    "LLM",
    "OPENAI_COMPATIBLE_PRESETS",
    "RAW_TOOL_ARGUMENTS",
    "AnthropicLLM",
    "ChatMessage",
    "ChatResponse",
    "ChatStreamEvent",
    "FunctionLLM",
    "HumanLLM",
    "ImagePart",
    "MessageRole",
    "ModelPrice",
    "OpenAILLM",
    "PriceTable",
    "ScriptedLLM",
    "TextPart",
    "ToolCall",
    "ToolSpec",
    "Usage",
]

_LAZY = {
    "OpenAILLM": "agent_core.llms.openai",
    "AnthropicLLM": "agent_core.llms.anthropic",
}
_EXTRA = {"AnthropicLLM": "anthropic"}
"""The extra that installs an adapter's SDK (the OpenAI SDK is in the core)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        if name in _EXTRA:
            from agent_core.extras import require

            require(_EXTRA[name], feature=name)  # A missing SDK names its pip install line.
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agent_core.llms' has no attribute {name!r}")
