"""Run ready steps as live runs of the runtime: each streams on the page, and Stop ends them.

Pressing Run ready steps starts every ready step in the runtime (`start_step`, one per step)
and reruns at once: the page is never greyed by a long call. Each step is then drawn like any
running step (`live_step`: its reply as it streams, its own Stop), under a box that
says how many of the batch still run and stops them all. When the last one ends, the next
rerun says what ran. The batches live in `st.cache_resource`, one per task, so a reload or a
second tab finds the batch the first tab started.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import streamlit as st

from agent_core import ParallelAgentRunner, StepRun
from agent_core.errors import AgentCoreError, UserError
from agent_core.types import TaskStepOutput
from stepwise.app.components import state
from stepwise.app.components.messages import describe, plural

__all__ = ["WHERE", "render_running", "report_finished", "start"]

WHERE = "controls"
"""The place under the Stepper's buttons where a finished batch reports."""


@dataclass
class _Batch:
    runs: list[StepRun] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return all(run.done for run in self.runs)


class _Batches:
    """The running Run ready steps batches of this server, by task id."""

    def __init__(self) -> None:
        self.by_task: dict[str, _Batch] = {}
        self.guard = threading.Lock()


@st.cache_resource
def _batches() -> _Batches:
    return _Batches()


def _batch(task_id: str) -> _Batch | None:
    batches = _batches()
    with batches.guard:
        return batches.by_task.get(task_id)


def start(runner: ParallelAgentRunner, task_id: str) -> None:
    """Start every step of the task that is ready now, each as a live run; returns at once.

    Raises:
        UserError: No step is ready, or the last batch is still running.
    """
    batches = _batches()
    with batches.guard:
        running = batches.by_task.get(task_id)
        if running is not None and not running.done:
            raise UserError("The ready steps are already running; wait, or press Stop all.")
        task_state = runner.get_task_state(task_id)
        live = {run.step_id for run in runner.running_steps(task_id)}
        ready = [
            step_id
            for step_id in task_state.queue
            if step_id not in live and task_state.is_ready(task_state.steps[step_id])
        ]
        if not ready:
            raise UserError("No step is ready: each upcoming step waits for another to finish.")
        batch = _Batch()
        batches.by_task[task_id] = batch
        for step_id in ready:
            batch.runs.append(runner.start_step(task_id, step_id))


def render_running(runner: ParallelAgentRunner, task_id: str) -> bool:
    """Say that a batch is running, with a button that stops every step of it.

    Returns whether the task has a batch that is running (its steps stream below).
    """
    slot = st.container()  # Drawn on every run, as Run until's box (`run_until_job`).
    batch = _batch(task_id)
    if batch is None or batch.done:
        return False
    left = sum(not run.done for run in batch.runs)
    with slot.container(border=True):
        st.markdown(
            f"**Running ready steps** · {left} of {plural(len(batch.runs), 'step')} still "
            "running; each appears below as it streams"
        )
        if st.button(
            "Stop all",
            key="stop-ready-steps",
            help="Stops every step of this batch that is still running: each is marked failed "
            "(stopped by you), to edit and run again. Steps already completed stay.",
        ):
            _stop(runner, batch)
            st.rerun()
    return True


def _stop(runner: ParallelAgentRunner, batch: _Batch) -> None:
    for run in batch.runs:
        if not run.done:
            try:
                runner.cancel_step(run.task_id, run.step_id)
            except AgentCoreError:  # It ended meanwhile: nothing left to stop.
                pass
    state.push_notice("info", "Stopped the ready steps that were running.", where=WHERE)


def report_finished(task_id: str, ran_text: Callable[[list[TaskStepOutput]], str]) -> None:
    """If the task's batch has ended, leave its report (`ran_text` of what ran) as a notice."""
    batches = _batches()
    with batches.guard:
        batch = batches.by_task.get(task_id)
        if batch is None or not batch.done:
            return
        del batches.by_task[task_id]
    outputs, failures = [], []
    for run in batch.runs:
        try:
            outputs.append(run.result(timeout=0))
        except Exception as error:  # The step failed, or was stopped: its card says why.
            failures.append(error)
    if not failures:
        state.push_notice("success", ran_text(outputs), where=WHERE)
        return
    said = describe(failures[0])
    head = f"{len(failures)} of {plural(len(batch.runs), 'step')} failed"
    text = f"{head} ({len(outputs)} completed and were kept): {said}"
    state.push_notice("error", text, where=WHERE)
