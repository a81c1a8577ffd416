"""A step running in the runtime: its streamed text so far, a Stop button, and a watcher.

The page never runs a step itself: Run step starts it in the runtime (`start_step`) and
reruns. Every rerun draws the task's live runs here and then watches them, so a page that
was reloaded, or opened in a second tab, picks a running step up where it is and shows its
result when it ends. Streamlit checks for a rerun request (a click, a reload) at each element
it draws, so the watch redraws at least every `_TICK_S`: Stop is answered within that time.

A step another process runs (`stepwise serve`, a user's attached program) is drawn the same
way: the app's host relays its events (`Host.runs_of`), and its Stop asks that process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from agent_core import ParallelAgentRunner, StepRun
from agent_core.events import StepEvent
from agent_core.runtime.step_runs import LIVE_RUNS
from stepwise.app.components import runtime, state
from stepwise.app.components.actions import attempt

__all__ = ["render_live_step", "shown_text", "wait_for_runs_elsewhere", "watch_live_steps"]

_TICK_S = 0.25
_CALL_PREVIEW_CHARS = 200


def render_live_step(runner: ParallelAgentRunner, run: StepRun) -> Any:
    """Draw a running step's box and its Stop button; returns the placeholder to watch into."""
    here = LIVE_RUNS.get(run.step_id) is run
    with st.container(border=True):
        where = "" if here else " in another process (a server, or your program)"
        st.markdown(f"**Running step{where}** · the model's reply appears as it streams")
        placeholder = st.empty()
        placeholder.code(shown_text(list(run.watch(timeout=0))), language=None, wrap_lines=True)
        if st.button(
            "Stop",
            key=f"stop-{run.step_id}",
            help="Stops this step. It is marked failed (stopped by you); edit it and run it "
            "again, or undo. Steps already completed stay.",
        ):
            # Another process's step: the host asks that process to stop it, and waits.
            stop = runner.cancel_step if here else runtime.shared_host().cancel_step
            stopped = attempt(lambda: stop(run.task_id, run.step_id))
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


def wait_for_runs_elsewhere(
    task_id: str, step_ids: set[str], *, changed: Callable[[], bool]
) -> None:
    """Steps run in another process and none of their events arrived yet: wait, then rerun.

    The app's host watches the task meanwhile (its lease asks that process for its events);
    the page is drawn again when a run arrives or the task moves on. Redrawn every
    `_TICK_S`, so a click is answered within that time.
    """
    if not step_ids:
        return
    host = runtime.shared_host()
    tick = st.empty()
    while True:
        tick.caption("Waiting for the live output of the step another process runs…")
        host.wait_for_change(_TICK_S)
        arrived = any(run.step_id in step_ids for run in host.runs_of(task_id))
        if arrived or changed():
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
