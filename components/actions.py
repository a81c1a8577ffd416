"""Running a runtime action from a button: errors become messages, never tracebacks."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import streamlit as st

from agent_core.errors import AgentCoreError
from agent_core.events import StepEvent
from components import state

logger = logging.getLogger("stepwise.app")


def attempt(action: Callable[[], Any], *, success: str | None = None) -> bool:
    """Run `action`; on failure keep a readable notice for the next rerun. True if it worked."""
    try:
        action()
    except AgentCoreError as exc:
        state.push_notice("error", str(exc))
        return False
    except Exception as exc:  # A bug, not a user error: log the traceback, show a sentence.
        logger.exception("action failed")
        state.push_notice("error", f"Something went wrong ({type(exc).__name__}: {exc}).")
        return False
    if success:
        state.push_notice("success", success)
    return True


def stream_into(events: Iterator[StepEvent], placeholder: Any) -> None:
    """Show a step's model reply as it streams, and its tool calls as they run."""
    text, calls = "", []
    for event in events:
        if event.kind == "token_delta":
            text += event.delta
        elif event.kind == "tool_call_started":
            calls.append(f"→ running {event.tool_name}")
        elif event.kind == "tool_call_finished":
            calls.append(f"← {event.output.tool_name}: {event.output.content[:200]}")
        else:
            continue
        placeholder.code("\n".join([text, *calls]) or "…", language=None, wrap_lines=True)


def show_notice() -> None:
    """Show the notice the last action left, once."""
    notice = state.pop_notice()
    if notice is None:
        return
    kind, text = notice
    {"success": st.success, "info": st.info, "warning": st.warning}.get(kind, st.error)(text)
