"""A step running in the runtime: its streamed text so far, a Stop button, and a watcher.

The page never runs a step itself: Run step starts it in the runtime (`start_step`) and
reruns. Every rerun draws the task's live runs here and then watches them, so a page that
was reloaded, or opened in a second tab, picks a running step up where it is and shows its
result when it ends. Streamlit checks for a rerun request (a click, a reload) at each element
it draws, so the watch redraws at least every `_TICK_S`: Stop is answered within that time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from agent_core import ParallelAgentRunner, StepRun
from agent_core.events import StepEvent
from components import state
from components.actions import attempt

__all__ = ["render_live_step", "shown_text", "watch_live_steps"]

_TICK_S = 0.25
_CALL_PREVIEW_CHARS = 200


def render_live_step(runner: ParallelAgentRunner, run: StepRun) -> Any:
    """Draw a running step's box and its Stop button; returns the placeholder to watch into."""
    with st.container(border=True):
        st.markdown("**Running step** · the model's reply appears as it streams")
        placeholder = st.empty()
        placeholder.code(shown_text(list(run.watch(timeout=0))), language=None, wrap_lines=True)
        if st.button(
            "Stop",
            key=f"stop-{run.step_id}",
            help="Stops this step. It is marked failed (stopped by you); edit it and run it "
            "again, or undo. Steps already completed stay.",
        ):
            stopped = attempt(lambda: runner.cancel_step(run.task_id, run.step_id))
            if stopped:
                state.push_notice("info", "Stopped the step. Edit its input and run it again.")
            st.rerun()
    return placeholder


def watch_live_steps(
    watched: list[tuple[StepRun, Any]], *, changed: Callable[[], bool] | None = None
) -> None:
    """Stream each run into its placeholder until all have ended, then rerun the page.

    `changed` says whether the task moved on from what the page drew (a running step's
    claim reached the store, another tab acted): the page is then drawn again, the runs
    picked up where they are, so what it shows, and the version its buttons act on, stay
    current while a step streams.
    """
    if not watched:
        return
    shown: list[list[StepEvent]] = [[] for _ in watched]
    while True:
        ended = all(run.done for run, _ in watched)  # Before reading: then nothing is missed.
        for events, (run, placeholder) in zip(shown, watched, strict=True):
            events.extend(run.events_since(len(events), timeout=_TICK_S / len(watched)))
            placeholder.code(shown_text(events), language=None, wrap_lines=True)
        if ended or (changed is not None and changed()):
            break
    st.rerun()


def shown_text(events: list[StepEvent]) -> str:
    """What a running step shows: the reply so far, then its tool calls as they run."""
    text, calls = "", []
    for event in events:
        if event.kind == "token_delta":
            text += event.delta
        elif event.kind == "tool_call_started":
            calls.append(f"→ running {event.tool_name}")
        elif event.kind == "tool_call_finished":
            preview = event.output.content[:_CALL_PREVIEW_CHARS]
            calls.append(f"← {event.output.tool_name}: {preview}")
    return "\n".join([text, *calls]) or "… waiting for the model"
