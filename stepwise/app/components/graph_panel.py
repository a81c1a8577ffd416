"""The Stepper's right column: the step DAG, the step clicked in it, and its history tools.

Clicking a node selects its step (kept in the session, per task): its card opens under the
graph, with "Undo to here", which goes back to just after that step in one action (it undoes
every completed step after it). A long task's older steps are folded into one node; clicking
it unfolds the next `UNFOLD_STEPS` of them (kept in the session, per task). "Compare
branches" shows two runs of the task side by side once an undo and a re-run made a second
one (`branch_compare`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from functools import partial

import streamlit as st

from agent_core import ParallelAgentRunner
from agent_core.dag import COLLAPSED_NODE
from agent_core.types import StepStatus, TaskState, TaskStatus
from stepwise.app.components import task_version
from stepwise.app.components.branch_compare import render_branch_compare, task_branches
from stepwise.app.components.dag_view import MAX_DRAWN_STEPS, render_dag
from stepwise.app.components.step_card import render_step_card
from stepwise.app.components.step_travel import steps_after

__all__ = [
    "UNFOLD_STEPS",
    "UndoToHere",
    "drawn_steps",
    "render_graph_panel",
    "selection_key",
    "undo_to_here",
]

_COMPARE_OPEN = "stepwise.compare_open"
UNFOLD_STEPS = 200
"""Steps one click on the fold adds to the graph: a few clicks reach the first step of a
500-step task, and each draw stays quick (vis-network lays out 260 nodes in about 0.2 s)."""


@dataclass(frozen=True)
class UndoToHere:
    """What "Undo to here" would do for a step: undo `steps` steps, or why it cannot."""

    steps: int
    reason: str
    """Why the button is disabled ("" when it is enabled)."""

    @property
    def enabled(self) -> bool:
        """Whether the button can be pressed."""
        return not self.reason


def selection_key(task_id: str) -> str:
    """The session key holding the step selected in the task's DAG."""
    return f"stepwise.dag_selected.{task_id}"


def _shown_key(task_id: str) -> str:
    return f"stepwise.dag_shown.{task_id}"


def drawn_steps(task_id: str) -> int:
    """How many of the task's newest steps its DAG draws before folding the older ones."""
    shown = st.session_state.get(_shown_key(task_id))
    return shown if isinstance(shown, int) and shown > MAX_DRAWN_STEPS else MAX_DRAWN_STEPS


def _unfold(task_id: str) -> None:
    st.session_state[_shown_key(task_id)] = drawn_steps(task_id) + UNFOLD_STEPS


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _not_active_reason(task_state: TaskState) -> str:
    task = task_state.task
    if task.imported:
        return "This task was imported from a trace: it is read only."
    if task.status in (TaskStatus.COMPLETED, TaskStatus.ABANDONED):
        return f"This task is {task.status.value}: its steps can no longer be undone."
    return "This task is read only here: its model is not set up (see Settings)."


def undo_to_here(
    task_state: TaskState, step_id: str, *, active: bool, running: bool = False
) -> UndoToHere:
    """How many steps "Undo to here" undoes for `step_id`, or why it cannot.

    It can when the task is active, no step is running, and the step is on the current path
    (a completed or skipped step) with steps done after it.
    """
    step = task_state.steps[step_id]
    name = f"Step {step.number}" if step.number is not None else "This step"
    if not active:
        return UndoToHere(0, _not_active_reason(task_state))
    if step_id not in task_state.completed:
        if step.status is StepStatus.UNDONE:
            why = f"{name} was undone: it is not on the current path."
        else:
            why = f"{name} has not run yet."
        return UndoToHere(0, why)
    after = steps_after(task_state, step_id)
    if after == 0:
        return UndoToHere(0, f"{name} is the last step done: nothing after it to undo.")
    if running:
        return UndoToHere(after, "A step is running: wait for it to finish, or Stop run until.")
    return UndoToHere(after, "")


def _select(key: str, step_id: str | None) -> None:
    st.session_state[key] = None if step_id == COLLAPSED_NODE else step_id


def _selected(task_state: TaskState) -> str | None:
    key = selection_key(task_state.task_id)
    step_id = st.session_state.get(key)
    if isinstance(step_id, str) and step_id in task_state.steps:
        return step_id
    st.session_state.pop(key, None)  # Its step is gone (an undo dropped a queued step).
    return None


def _running(runner: ParallelAgentRunner, task_id: str) -> bool:
    try:
        return bool(runner.running_steps(task_id))
    except Exception:  # A read-only runner may not know; the runtime refuses a clash anyway.
        return False


def _undo_button(
    runner: ParallelAgentRunner, task_state: TaskState, step_id: str, *, active: bool
) -> None:
    task_id = task_state.task_id
    plan = undo_to_here(
        task_state, step_id, active=active, running=active and _running(runner, task_id)
    )
    number = task_state.steps[step_id].number
    help_text = plan.reason or (
        f"Undoes the {_plural(plan.steps, 'step')} after step {number}, newest first: "
        f"the task goes back to just after step {number}."
    )
    if st.button(
        "Undo to here",
        key=f"undo-to-here-{task_id}",
        disabled=not plan.enabled,
        help=help_text,
    ):
        task_version.act(
            runner,
            task_id,
            lambda: runner.undo_step(task_id, steps=plan.steps),
            success=f"Went back to just after step {number} (undid {_plural(plan.steps, 'step')}).",
        )
        st.rerun()
    if not plan.enabled:
        st.caption(plan.reason)


def _selected_step(
    runner: ParallelAgentRunner, task_state: TaskState, step_id: str, *, active: bool
) -> None:
    step = task_state.steps[step_id]
    output = task_state.outputs.get(step_id)
    with st.container(border=True):
        if output is None:
            name = f"Step {step.number}" if step.number is not None else f"This {step.kind} step"
            st.caption(f"{name} has not run yet: it is under Upcoming steps.")
        else:
            render_step_card(
                output,
                expanded=True,
                key="dag",  # The same card may be drawn under Completed steps too.
                load_messages_sent=functools.partial(
                    runner.get_messages_sent, task_state.task_id, step_id
                ),
            )
            _undo_button(runner, task_state, step_id, active=active)
        if st.button("Close", key=f"dag-close-{task_state.task_id}", type="tertiary"):
            st.session_state.pop(selection_key(task_state.task_id), None)
            st.rerun()


def _unfold_button(task_state: TaskState) -> None:
    """The fold's click as a button: the fold sits above the newest steps, out of view."""
    task_id = task_state.task_id
    folded = len(task_state.steps) - drawn_steps(task_id)
    if folded > 0:
        st.button(
            f"Show {min(folded, UNFOLD_STEPS)} earlier steps in the graph",
            key=f"dag-unfold-{task_id}",
            type="tertiary",
            on_click=_unfold,
            args=(task_id,),
            help=f"{folded:,} older steps are folded into the graph's top node; clicking it "
            "shows them too.",
        )


def _close_compare() -> None:
    st.session_state.pop(_COMPARE_OPEN, None)


@st.dialog("Compare branches", width="large", on_dismiss=_close_compare)
def _compare_dialog(runner: ParallelAgentRunner, task_state: TaskState) -> None:
    sent = runner.get_messages_sent  # The model requests are compared too.
    render_branch_compare(task_state, key=f"compare-{task_state.task_id}", sent=sent)


def _compare(runner: ParallelAgentRunner, task_state: TaskState) -> None:
    task_id = task_state.task_id
    ready = len(task_branches(task_state)) >= 2
    if st.button(
        "Compare branches",
        key=f"compare-{task_id}",
        disabled=not ready,
        help="The undone run next to the new one, step by step, differences flagged."
        if ready
        else "Nothing to compare yet: undo a step, then run it again.",
    ):
        st.session_state[_COMPARE_OPEN] = task_id
    if ready and st.session_state.get(_COMPARE_OPEN) == task_id:
        _compare_dialog(runner, task_state)


def render_graph_panel(runner: ParallelAgentRunner, task_state: TaskState, *, active: bool) -> None:
    """Draw the task's DAG, the step selected in it, Undo to here and Compare branches.

    `active` says whether the task's steps can run and be undone on this page (an active
    task whose runner could be built); when it is False the buttons are disabled and say why.
    """
    task_id = task_state.task_id
    st.subheader("Step DAG", anchor=False)
    selected = _selected(task_state)
    render_dag(
        task_state,
        selected=selected,
        on_select=partial(_select, selection_key(task_id)),
        on_unfold=partial(_unfold, task_id),
        max_steps=drawn_steps(task_id),
        key=f"dag-{task_id}",
    )
    _unfold_button(task_state)
    if selected is not None:
        _selected_step(runner, task_state, selected, active=active)
    elif task_state.steps:
        st.caption("Click a step in the graph to open it here.")
    _compare(runner, task_state)
