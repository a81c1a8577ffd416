"""The Stepper's test controls for a task: Save as test, and Replay on current code.

Save as test opens the case editor (`case_editor`). Replay on current code makes
the case in memory (`case_from_task`, nothing written) and replays it at once: after a fix and
"Reload my code", it says whether the task still goes the same way, or where it first differs.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from agent_core.errors import AgentCoreError
from agent_core.recordings import case_from_task
from agent_core.types import TaskState
from stepwise.app.components.actions import show_message
from stepwise.app.components.case_editor import render_save_as_test
from stepwise.app.components.case_files import keep_result, last_result
from stepwise.app.components.case_replay import replay_here
from stepwise.app.components.case_results import render_result

__all__ = ["render_task_tests"]

_KEY = "replay:"
"""Prefix of a task's replay result in the session (the Tests page keys by file path)."""


def render_task_tests(runner: Any, task_state: TaskState) -> None:
    """Save as test and Replay on current code for `task_state`, and the last replay's result."""
    task_id = task_state.task_id
    why_not = "" if task_state.completed else "No step has run yet: run one first."
    save_col, replay_col, _ = st.columns([1.2, 1.8, 5], vertical_alignment="center")
    popover = save_col.popover(
        "Save as test",
        key="save-as-test",
        disabled=bool(why_not),
        help=why_not or "Keep this task as a case in stepwise_cases/, to replay on new code.",
        on_change="rerun",
    )
    if popover.open:  # Only when open: reading every step's request costs each rerun.
        with popover:
            render_save_as_test(runner, task_id)
    if replay_col.button(
        "Replay on current code",
        key="replay-current",
        disabled=bool(why_not),
        help=why_not
        or "Runs this task again on your code as it is now, the model answered from this "
        "recording, and shows the first step that differs. Reload my code first after a fix.",
    ):
        _replay(runner, task_id)
    summary = last_result(_KEY + task_id)
    if summary is not None:
        with st.expander("Replay on current code: the result", expanded=True):
            render_result(summary, key="replay-result")


def _replay(runner: Any, task_id: str) -> None:
    try:
        case = case_from_task(runner, task_id)
    except AgentCoreError as exc:
        show_message("error", exc, headline="This task cannot be replayed.")
        return
    with st.spinner("Replaying on your current code…"):
        keep_result(_KEY + task_id, replay_here(case))
