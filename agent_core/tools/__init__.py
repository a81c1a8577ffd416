"""Tools: `FunctionTool` for any Python function, and the built-in sandboxed tools."""

from agent_core.tools.base import BaseTool, FunctionTool, ToolMetadata
from agent_core.tools.calculator import calculate, calculator_tool
from agent_core.tools.files import file_tools
from agent_core.tools.image import image_tool
from agent_core.tools.python import python_tool
from agent_core.tools.workspace import Workspace

__all__ = [
    "BaseTool",
    "FunctionTool",
    "ToolMetadata",
    "Workspace",
    "calculate",
    "calculator_tool",
    "file_tools",
    "image_tool",
    "python_tool",
]
