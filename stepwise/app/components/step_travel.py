"""Travel a long task from any completed step's card: "Undo to here" and "Fork from here".

Undo to here undoes every step completed after the card's step at once (after a
confirmation that says how many, when more than one), instead of one Undo click per step.
Fork from here starts a new task where this one stood after the step, leaving this one
untouched, and opens it. "Fork with an agent" does the same, going on with an agent the
user picks (`fork_agents`) from the conversation up to the step; on an imported
task, which has no agent that runs here, it is the only fork. Both act on the task as the
page showed it (`task_version`).

The buttons sit in the history's fragment: each click reruns the whole page (`st.rerun`),
since undo and a fork change far more than the cards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from agent_core import ParallelAgentRunner
from agent_core.spec import AgentSpec
from agent_core.types import StepStatus, TaskState, TaskStep
from agent_core.user_code.registry import default_registry
from stepwise.app.components import runtime, state, task_version
from stepwise.app.components.fork_agents import fork_agents
from stepwise.app.components.messages import plural

__all__ = ["Travel", "render_step_travel", "steps_after"]

WHERE = "controls"
"""Undo and fork notices show under the task's controls, with Undo's own."""


@dataclass(frozen=True)
class Travel:
    """What the page allows: why undo cannot work now ("" if it can), and forking."""

    runner: ParallelAgentRunner
    task_state: TaskState
    undo_reason: str
    fork_reason: str


def steps_after(task_state: TaskState, step_id: str) -> int:
    """How many completed steps came after `step_id` (what Undo to here undoes)."""
    return len(task_state.completed) - 1 - task_state.completed.index(step_id)


def render_step_travel(travel: Travel, step: TaskStep, key: str) -> None:
    """The card's Undo to here and Fork from here (only on a completed step)."""
    if step.status is not StepStatus.COMPLETED or step.step_id not in travel.task_state.completed:
        return
    undo_col, fork_col, agent_col, _ = st.columns([1, 1, 1.3, 0.7])
    with undo_col:
        _undo_to_here(travel, step, key=key)
    if not travel.task_state.task.imported:  # An imported task's agent does not run here.
        with fork_col:
            _fork_from_here(travel, step, key=key)
    with agent_col:
        _fork_with_agent(travel, step, key=key)


def _undo_to_here(travel: Travel, step: TaskStep, *, key: str) -> None:
    count = steps_after(travel.task_state, step.step_id)
    reason = travel.undo_reason or (
        "" if count else "This is the last completed step: nothing after it to undo."
    )
    later = plural(count, "step")
    if count <= 1 or reason:
        if st.button(
            "Undo to here",
            key=f"{key}-undo-to",
            disabled=bool(reason),
            help=reason or f"Undoes the step after step {step.number}; it is upcoming again.",
        ):
            _undo(travel, count, step)
        return
    with st.popover("Undo to here", key=f"{key}-undo-to-pop"):
        st.caption(
            f"Undo the {later} after step {step.number}? The first of them is upcoming again, "
            "to edit and rerun; the undone steps stay in the history."
        )
        if st.button(f"Undo {later}", key=f"{key}-undo-to-confirm", type="primary"):
            _undo(travel, count, step)


def _undo(travel: Travel, count: int, step: TaskStep) -> None:
    task_id = travel.task_state.task_id
    runner = travel.runner
    task_version.act(
        runner,
        task_id,
        lambda: runner.undo_step(task_id, steps=count),
        success=f"Undid {plural(count, 'step')}: back to just after step {step.number}.",
        where=WHERE,
    )
    st.rerun()


def _fork_from_here(travel: Travel, step: TaskStep, *, key: str) -> None:
    if not st.button(
        "Fork from here",
        key=f"{key}-fork",
        disabled=bool(travel.fork_reason),
        help=travel.fork_reason
        or f"A new task that starts just after step {step.number}; this one stays as it is.",
    ):
        return
    task_id, runner = travel.task_state.task_id, travel.runner
    _fork(travel, step, lambda: runner.fork_task(task_id, step.step_id).task_id)


def _fork_with_agent(travel: Travel, step: TaskStep, *, key: str) -> None:
    """A popover: pick the agent the fork goes on with, then fork."""
    if travel.fork_reason:
        st.button(
            "Fork with an agent",
            key=f"{key}-fork-agent-off",
            disabled=True,
            help=travel.fork_reason,
        )
        return
    with st.popover("Fork with an agent", key=f"{key}-fork-agent-pop"):
        choices = fork_agents(state.agent_spec(), default_registry())
        label = st.selectbox(
            "Continue with",
            list(choices),
            key=f"{key}-fork-agent",
            help="Your agents (stepwise ui --agent) run on the model saved in Settings. The "
            "fork starts from the conversation up to this step; its next step asks the model.",
        )
        if st.button("Fork", key=f"{key}-fork-agent-go", type="primary") and label:
            _fork(travel, step, lambda: _forked_with(travel, step, choices[label]))


def _forked_with(travel: Travel, step: TaskStep, spec: AgentSpec) -> str:
    """Fork on the chosen agent's runner, so the fork's next step runs on that agent."""
    runner = runtime.runner_for(spec)
    task_id = travel.task_state.task_id
    return runner.fork_task(task_id, step.step_id, agent=spec, registry=default_registry()).task_id


def _fork(travel: Travel, step: TaskStep, fork: Callable[[], str]) -> None:
    """Run `fork` on the task as the page showed it; the page then opens the new task."""
    forks: list[str] = []
    task_version.act(
        travel.runner,
        travel.task_state.task_id,
        lambda: forks.append(fork()),
        success=f"Forked at step {step.number}: this is the new task.",
    )
    if forks:
        state.set_current_task_id(forks[0])  # The page opens the fork.
    st.rerun()
