"""The user's own agents, tools and MCP servers in the app: what loaded, what failed, reload.

Listing them runs none of their code: an agent or tools module is imported, and an MCP server
started, when the form picks it or a task on it opens (a folder's code runs only when asked
for); until then the list shows what is registered, by name and target.

Targets, messages and tracebacks come from the user's files and code, and an MCP server's
tool names, descriptions and schemas from the server: they are shown with `st.text`,
`st.code` and `st.json`, never through markdown. "Reload my code" also stops every MCP
server; the next listing starts it again, which is how a server that died comes back.
"""

from __future__ import annotations

import streamlit as st

from agent_core import user_code
from agent_core.errors import UserCodeError
from agent_core.tools.mcp import McpToolMetadata
from agent_core.user_code.registry import (
    AgentEntry,
    EntryKind,
    McpEntry,
    ToolsEntry,
    UserCodeRegistry,
)
from stepwise.app.components import state
from stepwise.app.components.messages import plain

__all__ = [
    "RELOAD_HELP",
    "agent_fix_advice",
    "render_code_error",
    "render_reload_button",
    "render_user_code",
]

RELOAD_HELP = (
    "Imports your agents and tools again from their files, restarts your MCP servers, and "
    "re-reads pyproject.toml / stepwise.toml, without restarting the app. A step already "
    "running finishes with the code it started with; the next steps of every task use the "
    "reloaded code."
)
_NONE_YET = (
    "None yet. Start the app with `stepwise ui --agent NAME=my_agent.py:build_agent --tools "
    'NAME=my_tools.py --mcp NAME="COMMAND ARGS"` in your project folder, or list them under '
    "`[tool.stepwise]` in its pyproject.toml (see examples/README.md)."
)


def render_code_error(
    exc: UserCodeError, *, headline: str = "Your code failed:", advice: str = ""
) -> None:
    """A failure in the user's code: which target and what to do, then their traceback.

    One bordered block: the red box holds the headline, the error (escaped: it quotes the
    user's code) and `advice` (the app's markdown); their traceback follows inside the block.
    """
    with st.container(border=True):
        body = f"**{headline}**  \n{plain(str(exc))}" + (f"  \n{advice}" if advice else "")
        st.error(body)
        if exc.traceback:
            st.caption("Traceback (your code's frames):")
            st.code(exc.traceback, language=None)


_KINDS: tuple[EntryKind, ...] = ("agent", "tools", "mcp")
_LOADED_WHEN_PICKED = (
    "An agent or tools module is imported, and an MCP server started, when you pick it or "
    "open a task on it: then its tools, or what went wrong, show here."
)
_COMMAND_LINE = {"agent": "--agent", "tools": "--tools"}
_FRAME = '  File "'
"""How a frame of a Python traceback starts (`user_traceback` keeps the user's frames)."""


def _typed_target_advice(source: str, exc: UserCodeError, kind: str) -> str:
    """What to do when a command-line target fails before any of the user's code ran.

    Reload my code imports the same target again, as typed: a typo in it (a file, module or
    name that is not there) is fixed only in the command, by restarting `stepwise ui`.
    """
    flag = _COMMAND_LINE[kind]
    # A traceback with frames: their code ran (and raised), so Reload after a fix works.
    if source != flag or _FRAME in (exc.traceback or ""):
        return ""
    return (
        f"This target was typed on the command line ({flag}): Reload my code imports it again "
        "as typed. If the target has a typo, fix it in the command and restart `stepwise ui`; "
        "if the file is only missing or wrong, fix the file, then Reload my code."
    )


def agent_fix_advice(exc: UserCodeError) -> str:
    """What fixes an agent that could not be loaded: a restart for a typo in `--agent`."""
    registry = user_code.default_registry()
    for name in registry.names("agent"):
        entry = registry.entry("agent", name, load=False)  # The failed one is loaded already.
        if isinstance(entry, AgentEntry) and entry.error and entry.target == exc.target:
            advice = _typed_target_advice(entry.source, exc, "agent")
            if advice:
                return advice
    return "Fix your code, then press Reload my code on the New task form."


def _render_agent(entry: AgentEntry) -> None:
    if entry.error is None:
        st.text(f"Agent {entry.name}: {entry.target}")
    else:
        advice = _typed_target_advice(entry.source, entry.error, "agent")
        render_code_error(entry.error, headline="Your agent could not be loaded:", advice=advice)


def _render_tools(entry: ToolsEntry) -> None:
    if entry.error is None:
        names = ", ".join(tool.name for tool in entry.tools)
        st.text(f"Tools {entry.name} ({names}): {entry.module}")
    else:
        advice = _typed_target_advice(entry.source, entry.error, "tools")
        render_code_error(entry.error, headline="Your tools could not be loaded:", advice=advice)


def _render_mcp(entry: McpEntry) -> None:
    if entry.error is not None:
        headline = (
            "Your MCP server stopped:" if entry.tools else "Your MCP server could not be started:"
        )
        render_code_error(entry.error, headline=headline)
        return
    names = ", ".join(tool.name for tool in entry.tools)
    st.text(f"MCP server {entry.name} ({names}): {entry.spec}")
    for tool in entry.tools:
        metadata = tool.metadata
        read_only = isinstance(metadata, McpToolMetadata) and metadata.read_only
        effect = "read-only" if read_only else "may change things: undo cannot take a call back"
        st.text(f"  {tool.name} ({effect}): {metadata.description}")
        st.json(metadata.to_spec().parameters, expanded=False)


def render_reload_button(*, key: str) -> None:
    """Reload my code, where a failure in the user's code is shown (not only in New task)."""
    if st.button("Reload my code", key=key, help=RELOAD_HELP):
        _reload(servers=bool(user_code.default_registry().names("mcp")))
        st.rerun()


def _reload(*, servers: bool) -> None:
    user_code.reload()
    restarted = ", and restarted your MCP servers" if servers else ""
    state.push_notice("success", f"Reloaded your agents and tools{restarted}.")


_RENDER = {"agent": _render_agent, "tools": _render_tools, "mcp": _render_mcp}
_NOT_LOADED = {"agent": "Agent", "tools": "Tools", "mcp": "MCP server"}
_TARGET = {
    "agent": UserCodeRegistry.agent_target,
    "tools": UserCodeRegistry.tools_module,
    "mcp": UserCodeRegistry.mcp_server,
}


def _render_entry(registry: UserCodeRegistry, kind: EntryKind, name: str) -> None:
    """An entry as loaded (its tools or its error), or, not asked for yet, its target."""
    entry = registry.entry(kind, name, load=False)
    if entry is None:
        st.text(f"{_NOT_LOADED[kind]} {name}: {_TARGET[kind](registry, name)}")
    else:
        _RENDER[kind](entry)  # type: ignore[operator]


def render_user_code(registry: UserCodeRegistry) -> None:
    """The user's agents, tools modules and MCP servers, each with its error if any; Reload.

    Only those already loaded (picked, or a task's) show their tools or error: the list
    itself imports and starts nothing.
    """
    names = {kind: registry.names(kind) for kind in _KINDS}
    problems = registry.problems
    failed = bool(problems) or any(
        entry is not None and not entry.ok
        for kind in _KINDS
        for entry in (registry.entry(kind, name, load=False) for name in names[kind])
    )
    with st.expander("Your agents, tools and MCP servers", expanded=failed):
        if not (any(names.values()) or problems):
            st.caption(_NONE_YET)
        else:
            st.caption(_LOADED_WHEN_PICKED)
        for problem in problems:
            render_code_error(problem, headline="Your Stepwise settings have a problem:")
        for kind in _KINDS:
            for name in names[kind]:
                _render_entry(registry, kind, name)
        if st.button("Reload my code", key="form-reload", help=RELOAD_HELP):
            _reload(servers=bool(names["mcp"]))
            st.rerun()
