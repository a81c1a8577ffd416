"""Running a runtime action from a button: errors become messages, never tracebacks.

An error is shown in the app's words (`messages.describe`): it names the button or
page that fixes it and calls steps by number. The sentence can quote model or tool text (a
step's error, a tool's name), so it goes into its coloured box through `messages.plain`, which
Streamlit's markdown shows character for character. Success is a toast: the app's own words.

A notice is shown after the rerun that follows the click, either at the top of the page or,
given `where=`, by the `show_notice(where=...)` the page draws next to the control.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import streamlit as st

from agent_core.errors import AgentCoreError
from agent_core.types import TaskState
from stepwise.app.components import state
from stepwise.app.components.messages import describe, plain

__all__ = ["attempt", "show_message", "show_notice"]

logger = logging.getLogger("stepwise.app")

_BOXES = {"info": st.info, "warning": st.warning, "success": st.success, "error": st.error}
_ICONS = {"info": ":material/info:", "warning": ":material/warning:", "error": ":material/error:"}


def attempt(
    action: Callable[[], Any],
    *,
    success: str | None = None,
    task_state: TaskState | None = None,
    where: str | None = None,
) -> bool:
    """Run `action`; on failure keep a sentence to show after the rerun. True if it worked.

    Args:
        action: The runtime call.
        success: The app's own words for a toast when it worked (markdown: never model text).
        task_state: The task as the page showed it, so errors name its steps by number.
        where: The place the page shows the error (see `show_notice`); None: the page's top.
    """
    try:
        action()
    except AgentCoreError as exc:
        state.push_notice("error", describe(exc, task_state), where=where)
        return False
    except Exception as exc:  # A bug, not a user error: log the traceback, show a sentence.
        logger.exception("action failed")
        state.push_notice("error", describe(exc, task_state), where=where)
        return False
    if success:
        state.push_notice("success", success, where=where)
    return True


def show_message(
    kind: str,
    text: str | BaseException,
    *,
    headline: str | None = None,
    task_state: TaskState | None = None,
) -> None:
    """One box of `kind` holding the app's `headline` (markdown) and `text` (shown as typed).

    `text` may quote the runtime, and so the model: an error is put in the app's words
    (`messages.describe`), and any text is escaped, never interpreted as markdown or HTML.
    """
    body = describe(text, task_state) if isinstance(text, BaseException) else text
    markdown = plain(body)
    if headline:
        markdown = f"**{headline}**  \n{markdown}" if body else f"**{headline}**"
    box = _BOXES.get(kind, st.error)
    box(markdown, icon=_ICONS.get(kind))


def show_notice(where: str | None = None) -> None:
    """Show the notice the last action left for `where` (None: the top of the page), once.

    Success is a toast (the app's own words); anything else is a box here, in plain text.
    """
    notice = state.pop_notice(where)
    if notice is None:
        return
    kind, text = notice
    if kind == "success":
        st.toast(text, icon=":material/check_circle:")
    else:
        show_message(kind, text)
