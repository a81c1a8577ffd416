"""The user's own agents and tools in the app: what loaded, what failed and why, and reload.

Targets, messages and tracebacks come from the user's files and code: they are shown with
`st.text` and `st.code`, never through markdown.
"""

from __future__ import annotations

import streamlit as st

from agent_core import user_code
from agent_core.errors import UserCodeError
from agent_core.user_code.registry import AgentEntry, ToolsEntry, UserCodeRegistry
from components import state

__all__ = ["RELOAD_HELP", "render_code_error", "render_user_code"]

RELOAD_HELP = (
    "Imports your agents and tools again from their files, and re-reads pyproject.toml / "
    "stepwise.toml, without restarting the app. A step already running finishes with the code "
    "it started with; the next steps of every task use the reloaded code."
)
_NONE_YET = (
    "None yet. Start the app with `stepwise ui --agent NAME=my_agent.py:build_agent --tools "
    "NAME=my_tools.py` in your project folder, or list them under `[tool.stepwise]` in its "
    "pyproject.toml (see examples/README.md)."
)


def render_code_error(exc: UserCodeError, *, headline: str = "Your code failed:") -> None:
    """A failure in the user's code: which target and what to do, then their traceback."""
    st.error(headline)  # The app's own words; the rest is the user's and shown as text.
    st.text(str(exc))
    if exc.traceback:
        st.code(exc.traceback, language=None)


def _render_agent(entry: AgentEntry) -> None:
    if entry.error is None:
        st.text(f"Agent {entry.name}: {entry.target}")
    else:
        render_code_error(entry.error, headline="Your agent could not be loaded:")


def _render_tools(entry: ToolsEntry) -> None:
    if entry.error is None:
        names = ", ".join(tool.name for tool in entry.tools)
        st.text(f"Tools {entry.name} ({names}): {entry.module}")
    else:
        render_code_error(entry.error, headline="Your tools could not be loaded:")


def _reload() -> None:
    user_code.reload()
    state.push_notice("success", "Reloaded your agents and tools.")


def render_user_code(registry: UserCodeRegistry) -> None:
    """The user's agents and tools modules, each loaded or with its error, and Reload."""
    agents, tools = registry.agents(), registry.tool_modules()
    problems = registry.problems
    failed = bool(problems) or any(not entry.ok for entry in (*agents, *tools))
    with st.expander("Your agents and tools", expanded=failed):
        if not (agents or tools or problems):
            st.caption(_NONE_YET)
        for problem in problems:
            render_code_error(problem, headline="Your Stepwise settings have a problem:")
        for agent in agents:
            _render_agent(agent)
        for module in tools:
            _render_tools(module)
        if st.button("Reload my code", key="form-reload", help=RELOAD_HELP):
            _reload()
            st.rerun()
