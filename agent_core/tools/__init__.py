"""Tools an agent can call: their metadata, the base class, and tools built from functions."""

from agent_core.tools.base import BaseTool, FunctionTool, ToolMetadata

__all__ = ["BaseTool", "FunctionTool", "ToolMetadata"]
