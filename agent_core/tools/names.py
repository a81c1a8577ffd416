"""The built-in tools' names: what a spec may list in `tools`, and no user module may be called.

Apart from the tools themselves so that reading the names imports none of them.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["BUILTIN_TOOLS", "ToolName"]

ToolName = Literal["arithmetic", "calculator", "files", "python", "image"]
"""A built-in tool (or set of tools) by name, as an `AgentSpec` lists it."""

BUILTIN_TOOLS: tuple[ToolName, ...] = get_args(ToolName)
"""Every `ToolName`, in order."""
