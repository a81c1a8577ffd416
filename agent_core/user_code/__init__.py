"""The user's own agents, tools and MCP servers: entries read, imported on demand, reloaded.

`registry.py` holds the `UserCodeRegistry`; `config.py` reads the entries from the project's
files and the `stepwise` command's flags; `imports.py` imports the user's modules and trims
tracebacks to the user's frames.
"""

from agent_core.user_code.registry import (
    AGENTS_ENV,
    MCP_ENV,
    PROJECT_FILES,
    TOOLS_ENV,
    AgentEntry,
    EntryKind,
    McpEntry,
    ToolsEntry,
    UserCodeRegistry,
    check_entry,
    default_registry,
    generation,
    parse_entry,
    reload,
    resolve_target,
    tools_from_module,
)

__all__ = [
    "AGENTS_ENV",
    "MCP_ENV",
    "PROJECT_FILES",
    "TOOLS_ENV",
    "AgentEntry",
    "EntryKind",
    "McpEntry",
    "ToolsEntry",
    "UserCodeRegistry",
    "check_entry",
    "default_registry",
    "generation",
    "parse_entry",
    "reload",
    "resolve_target",
    "tools_from_module",
]
