"""Threads and forks in the Stepper: continue a finished task, say where a task came from.

A task starts a conversation of its own. "Continue this conversation" on a finalized task
opens a New task form that starts the next task from that task's whole conversation, on the
same agent (`create_task(continue_from=...)`), so the new task joins its thread. A task's
header says which earlier task it continues, or which task and step it was forked from, with
a button that opens that task.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from agent_core.errors import AgentCoreError
from agent_core.types import Task, TaskState, TaskStatus, short_id
from stepwise.app.components import runtime, state
from stepwise.app.components.actions import attempt, show_notice
from stepwise.app.components.messages import plural
from stepwise.app.components.task_form import agent_label, model_label

__all__ = [
    "continue_reason",
    "continuing",
    "render_continue_button",
    "render_continue_form",
    "render_lineage",
]

_CONTINUE = "stepwise.continue_from"
_FORM = "continue-form"
_TEXT = "continue-task"


def continuing() -> str | None:
    """The finalized task whose conversation the New task form continues, if any."""
    return st.session_state.get(_CONTINUE)


def _open_task(task_id: str | None) -> None:
    st.session_state.pop(_CONTINUE, None)
    state.set_current_task_id(task_id)


def _start_continuing(task_id: str, leave: Callable[[], None]) -> None:
    st.session_state[_CONTINUE] = task_id
    st.session_state[_TEXT] = ""
    leave()


# --- on a finished task -----------------------------------------------------------------------


def continue_reason(task: Task) -> str:
    """Why this task's conversation cannot be continued ("" when it can)."""
    if task.imported:
        return "Imported from a trace: its conversation is read only."
    if task.status is not TaskStatus.COMPLETED:
        return "Only a finished task's conversation can be continued: press Finalize first."
    spec = runtime.spec_of(task.task_id)
    if spec.agent is None:
        return ""  # The built-in workers all read the task's conversation.
    try:
        worker = runtime.runner_for(spec).agent_worker
    except AgentCoreError:
        return ""  # Creating the task says what is wrong.
    own = getattr(worker, "keeps_own_conversation", None)
    return f"Not for this agent: {own}, so Stepwise cannot continue it." if own else ""


def render_continue_button(task: Task, *, leave: Callable[[], None]) -> None:
    """Continue this conversation: a New task form that continues this task's thread.

    `leave` closes the task on the page (the Stepper forgets it, URL included).
    """
    reason = continue_reason(task)
    st.button(
        "Continue this conversation",
        key="continue-thread",
        disabled=bool(reason),
        help=reason
        or "A new task that starts with this task's whole conversation: ask a follow-up.",
        on_click=_start_continuing,
        args=(task.task_id, leave),
    )


# --- the form ---------------------------------------------------------------------------------


def render_continue_form(earlier_id: str) -> None:
    """The New task form, set to continue `earlier_id`'s conversation on its agent."""
    st.header("New task", anchor=False)
    try:
        earlier = runtime.reader().get_task(earlier_id)
    except AgentCoreError:  # Deleted in another tab, say: back to the plain form.
        st.session_state.pop(_CONTINUE, None)
        st.rerun()
    spec = runtime.spec_of(earlier_id)
    count = len(earlier.memory)
    st.markdown(
        f"Continues the conversation of task **{short_id(earlier_id)}** "
        f"({plural(count, 'message')}): the model reads it all before the new question."
    )
    st.caption("The earlier task")
    st.code(_clip(earlier.input), language=None, wrap_lines=True)
    st.text(f"Model: {model_label(spec)} · Agent: {agent_label(spec)}")  # names: not markdown
    text = st.text_area("Task", placeholder="Your follow-up: what should the agent do?", key=_TEXT)
    create, other = st.columns([1, 3])
    if create.button("Create task", type="primary", key="continue-create"):
        if not text.strip():
            st.warning("Type the task first: what should the agent do?")
            return
        attempt(lambda: _create(earlier_id, text), where=_FORM)
        st.rerun()
    other.button("Start a new conversation instead", on_click=_open_task, args=(None,))
    show_notice(where=_FORM)


def _create(earlier_id: str, text: str) -> None:
    runner = runtime.runner_for(runtime.spec_of(earlier_id))
    task = runner.create_task(text, continue_from=earlier_id)
    _open_task(task.task_id)


def _clip(text: str, limit: int = 600) -> str:
    return text[:limit] + ("…" if len(text) > limit else "")


# --- where a task came from -------------------------------------------------------------------


def render_lineage(task_state: TaskState) -> None:
    """Under the header: the task this one continues, or the one it was forked from."""
    task = task_state.task
    fork = task.forked_from
    if fork is not None:
        at = f"step {fork.number}" if fork.number is not None else "a completed step"
        _line(f"Forked from task {short_id(fork.task_id)} at {at}.", fork.task_id, "forked")
    earlier = task.continued_from
    if earlier is not None:
        thread = task.thread_id
        started = "" if thread == earlier else f"thread of task {short_id(thread)}; "
        said = (
            f"Continues the conversation of task {short_id(earlier)} ({started}"
            f"{plural(task.history_length, 'message')} before this task's question)."
        )
        _line(said, earlier, "continued")


def _line(text: str, task_id: str, key: str) -> None:
    words, link = st.columns([5, 1], vertical_alignment="center")
    words.caption(text)  # The app's own words and short ids.
    link.button(
        f"Open task {short_id(task_id)}",
        key=f"lineage-{key}",
        type="tertiary",
        on_click=_open_task,
        args=(task_id,),
    )
