"""Running a runtime action from a button: errors become messages, never tracebacks.

Messages from the runtime can quote model or tool text (a step's error, a breakpoint's tool
name), so they are shown with `st.text`, never through markdown (`st.error`, `st.info`...),
which would interpret them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import streamlit as st

from agent_core.errors import AgentCoreError
from components import state

__all__ = ["attempt", "show_message", "show_notice"]

logger = logging.getLogger("stepwise.app")

_HEADLINES = {
    "error": "That did not work:",
    "warning": "Note:",
    "info": "Done:",
}


def attempt(action: Callable[[], Any], *, success: str | None = None) -> bool:
    """Run `action`; on failure keep a readable notice for the next rerun. True if it worked.

    `success` is shown as markdown, so it must be the app's own text, never model output.
    """
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


def show_message(kind: str, text: str, *, headline: str | None = None) -> None:
    """A box of `kind` with the app's `headline`, and `text` below it as plain text."""
    box = {"info": st.info, "warning": st.warning, "success": st.success}.get(kind, st.error)
    box(headline or _HEADLINES.get(kind, _HEADLINES["error"]))
    st.text(text)


def show_notice() -> None:
    """Show the notice the last action left, once.

    Success notices are the app's own sentences; any other notice may quote the runtime (and
    so the model), and is shown as plain text under a fixed headline.
    """
    notice = state.pop_notice()
    if notice is None:
        return
    kind, text = notice
    if kind == "success":
        st.success(text)
    else:
        show_message(kind, text)
