"""Run until as a job of the runtime: it goes on whoever watches, and a click stops it.

The page starts it (`start_until`) and reruns; every rerun of the task's page shows that it
is running, its steps stream like any other (`live_step`), and when it ends the
next rerun reports why it stopped. The jobs live in `st.cache_resource`, one per task, so a
reload or a second tab finds the job the first tab started.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

import streamlit as st

from agent_core import ParallelAgentRunner
from agent_core.errors import UserError
from agent_core.runtime.breakpoints import Breakpoint, RunUntilResult
from stepwise.app.components import state
from stepwise.app.components.messages import describe, describe_data

__all__ = ["render_running", "report_finished", "start", "wait_while_running"]

_STOP_REASONS = {
    "last_step": "the last step ran: press Finalize, or Undo to go back",
    "tool_approval": "a tool call awaits your approval: Approve and run step, or Reject",
    "question": "the agent asks you something: type your answer and press Run step",
    "max_steps": "the step limit was reached",
}
_TICK_S = 0.25

Job = concurrent.futures.Future[RunUntilResult]


class _Jobs:
    """The Run until jobs of this server, by task id."""

    def __init__(self) -> None:
        self.by_task: dict[str, Job] = {}
        self.guard = threading.Lock()


@st.cache_resource
def _jobs() -> _Jobs:
    return _Jobs()


def _job(task_id: str) -> Job | None:
    jobs = _jobs()
    with jobs.guard:
        return jobs.by_task.get(task_id)


def start(runner: ParallelAgentRunner, task_id: str, stops: list[Breakpoint]) -> None:
    """Start Run until for the task, continuing past a breakpoint it stands on.

    One call of the runtime's `start_until(..., resume=True)`: a debugger's continue, so the
    step the last Run until stopped before runs, and the next breakpoint stops it again.
    """
    jobs = _jobs()
    with jobs.guard:
        running = jobs.by_task.get(task_id)
        if running is not None and not running.done():
            raise UserError("Run until is already running for this task; wait, or press Stop.")
        jobs.by_task[task_id] = runner.start_until(task_id, stop=stops, resume=True)


def render_running(task_id: str) -> bool:
    """Say that Run until is running, with a button to stop it.

    Returns whether the task has a job to watch, or one that ended after this page run
    began and whose report the next rerun shows.
    """
    # An empty container on every run keeps the page's next elements in their places. A box
    # that only comes while a job runs shifts them down one, and Streamlit keeps the elements
    # it has not redrawn on screen, stale, for as long as this page run waits on the job: the
    # controls showed twice, the streaming step a screen lower (issue 22, item 8).
    slot = st.container()
    job = _job(task_id)
    if job is None:
        return False
    if job.done():
        return True  # Ended since `report_finished` looked: `wait_while_running` reruns.
    with slot.container(border=True):
        st.markdown("**Run until is running** · each step appears below as it runs")
        if st.button(
            "Stop run until",
            key="stop-run-until",
            help="Stops after cancelling the step that is running: that step goes back to "
            "upcoming, untouched. Steps already completed stay.",
        ):
            job.cancel()  # Completes once the run has unwound.
            concurrent.futures.wait([job], timeout=10)
            st.rerun()
    return True


def wait_while_running(
    runner: ParallelAgentRunner, task_id: str, drawn: set[str], *, drawn_version: int
) -> None:
    """Rerun when the job ends, starts a step the page has not drawn, or commits a step."""
    job = _job(task_id)
    if job is None:
        return
    while not job.done():
        if {run.step_id for run in runner.running_steps(task_id)} - drawn:
            break
        if runner.get_task_state(task_id).version != drawn_version:
            break
        st.empty()  # A point where Streamlit notices a click or a reload.
        time.sleep(_TICK_S)
    st.rerun()


WHERE = "controls"
"""The place under the Stepper's buttons where a finished Run until reports."""


def report_finished(task_id: str) -> None:
    """If the task's Run until has ended, leave its report as the page's notice."""
    jobs = _jobs()
    with jobs.guard:
        job = jobs.by_task.get(task_id)
        if job is None or not job.done():
            return
        del jobs.by_task[task_id]
    if isinstance(job.exception(), asyncio.CancelledError):
        state.push_notice(
            "info", "Stopped Run until. The step that was running is upcoming.", where=WHERE
        )
        return
    error = job.exception()
    if error is not None:
        state.push_notice("error", describe(error), where=WHERE)
        return
    _report(job.result())


def _report(result: RunUntilResult) -> None:
    ran = f"Ran {len(result.outputs)} step{'s' if len(result.outputs) != 1 else ''}; stopped: "
    if result.reason == "error":
        # The error as data words it from its code; its text stays for an error without.
        said = describe_data(result.error) if result.error is not None else result.detail
        state.push_notice("error", ran + "a step failed. " + said, where=WHERE)
        return
    why = _STOP_REASONS.get(result.reason) or result.detail or result.reason
    state.push_notice("info", ran + why + ".", where=WHERE)
