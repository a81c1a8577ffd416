"""Two tabs, one task: an action acts only on the task as the page showed it.

Each page run that draws a task remembers the task's version once everything is drawn
(`remember`). A click arrives in the next page run, before that run has drawn anything, so
the remembered version is the one the person was looking at. `act` compares it with the
task's version in the store just before acting: if another tab (or a Run until, or another
process) changed the task meanwhile, the action is refused with `CHANGED` and the page shows
the task as it is now.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from agent_core import ParallelAgentRunner
from agent_core.errors import AgentCoreError
from agent_core.types import TaskState
from stepwise.app.components import state
from stepwise.app.components.actions import attempt

__all__ = ["CHANGED", "act", "is_stale", "remember", "shown"]

CHANGED = "This task changed in another tab; the page now shows its current state."
_SHOWN = "stepwise.shown_version"


def remember(task_state: TaskState) -> None:
    """Record that the page now shows `task_state` (call once the page is drawn)."""
    st.session_state[_SHOWN] = (task_state.task_id, task_state.version)


def shown(task_id: str) -> int | None:
    """The version of `task_id` the page last drew in this session, if it drew it."""
    seen: Any = st.session_state.get(_SHOWN)
    if isinstance(seen, tuple) and len(seen) == 2 and seen[0] == task_id:
        return seen[1]
    return None


def is_stale(runner: ParallelAgentRunner, task_id: str) -> bool:
    """Whether the task changed since the page drew it (False if it never drew it)."""
    seen = shown(task_id)
    return seen is not None and runner.get_task_state(task_id).version != seen


def act(
    runner: ParallelAgentRunner,
    task_id: str,
    action: Callable[[], Any],
    *,
    success: str | None = None,
    where: str | None = None,
) -> bool:
    """Run a button's `action` on the task the page showed; True if it ran and worked.

    A task that changed since the page drew it is left alone, and the notice says so: the
    caller reruns the page as after any action, and the rerun shows the current state.
    `where` names the place on the page that shows the notice (None: the page's top).
    """
    try:
        stale = is_stale(runner, task_id)
        task_state = runner.get_task_state(task_id)
    except AgentCoreError:  # The task is gone, say: the action meets it too, and says so.
        stale, task_state = False, None
    if stale:
        state.push_notice("warning", CHANGED, where=where)
        return False
    return attempt(action, success=success, task_state=task_state, where=where)
