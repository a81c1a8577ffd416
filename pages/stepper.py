"""Stepper: run a task one step at a time, steer it, undo it, and watch its DAG grow.

The page keeps only the task id in the session (and in the URL, so a reload finds the task
again); everything else is read from the store on each rerun. Text that came from a person
or a model is shown with `st.code`, never through markdown.
"""

from __future__ import annotations

import logging
from itertools import islice
from typing import Any

import streamlit as st

from agent_core import AtStep, CostOver, OnTool, ParallelAgentRunner, StepRun
from agent_core.breakpoints import Breakpoint
from agent_core.errors import AgentCoreError, UserCodeError
from agent_core.llms.scripted import HumanLLM
from agent_core.types import StepStatus, TaskState, TaskStatus
from components import run_until_job, runtime, state
from components.actions import attempt, show_message, show_notice
from components.dag_view import render_dag
from components.live_step import render_live_step, watch_live_steps
from components.memory_view import render_memory
from components.step_card import render_step_card
from components.step_editor import next_prompt, render_upcoming_step
from components.task_form import agent_label, model_label, render_create_form
from components.user_code_view import render_code_error

logger = logging.getLogger("stepwise.app")

CARDS_SHOWN = 25
"""Completed steps drawn as cards on each rerun (the newest); the rest on request."""
TASK_PARAM = "task"
"""The URL query parameter holding the task id, so a page reload keeps the task."""
_SHOWN_STATUSES = (StepStatus.COMPLETED, StepStatus.UNDONE)
_RUNNABLE = (TaskStatus.ACTIVE, TaskStatus.FAILED)
"""Task statuses whose steps can still run (a failed step waits to be fixed and retried)."""


def _current_task_id() -> str | None:
    """The session's task, else the one in the URL (a reload starts a new session)."""
    task_id = state.current_task_id()
    url_id = st.query_params.get(TASK_PARAM)
    if task_id is None and url_id:
        state.set_current_task_id(url_id)
        return url_id
    if task_id is not None and url_id != task_id:
        st.query_params[TASK_PARAM] = task_id
    return task_id


def _leave_task() -> None:
    state.set_current_task_id(None)
    st.query_params.pop(TASK_PARAM, None)


def _human_llm(runner: ParallelAgentRunner) -> HumanLLM | None:
    llm = getattr(runner.agent_worker, "llm", None)
    return llm if isinstance(llm, HumanLLM) else None


def _header(task_state: TaskState) -> None:
    task = task_state.task
    st.caption("Task")
    text = task.input[:2000] + ("…" if len(task.input) > 2000 else "")
    st.code(text, language=None, wrap_lines=True)
    usage = task.usage
    cost = f"${usage.cost_usd:.4f}" if usage.cost_usd is not None else "cost unknown"
    st.caption(
        f"Status: **{task.status.value}** · {len(task_state.completed)} steps done · "
        f"{len(task_state.queue)} upcoming · {usage.total_tokens:,} tokens · {cost}"
    )
    spec = runtime.spec_of(task.task_id)
    st.text(f"Model: {model_label(spec)} · Agent: {agent_label(spec)}")  # names: not markdown


def _breakpoints() -> list[Breakpoint]:
    with st.popover("Breakpoints"):
        before_tools = st.checkbox("Before any tool step", key="bp-tools")
        tool = st.text_input("On the tool named", key="bp-tool")
        after = st.number_input("After this many steps", min_value=0, step=1, key="bp-step")
        cost = st.number_input("When the cost is over $", min_value=0.0, step=0.01, key="bp-cost")
    chosen: list[Breakpoint] = []
    if before_tools:
        chosen.append(OnTool())
    if tool.strip():
        chosen.append(OnTool(tool.strip()))
    if after:
        chosen.append(AtStep(int(after)))
    if cost:
        chosen.append(CostOver(float(cost)))
    return chosen


def _controls(
    runner: ParallelAgentRunner, task_state: TaskState, *, active: bool, until_running: bool
) -> None:
    task_id = task_state.task_id
    last = task_state.last_output
    columns = st.columns(6)
    stops = _breakpoints() if active else []
    if columns[0].button(
        "Run ready steps",
        disabled=not active,
        help="Runs every ready step at once (parallel plan items and tool calls).",
    ):
        with st.spinner("Running the ready steps…"):
            attempt(lambda: runner.run_steps_in_queue(task_id))
        st.rerun()
    if columns[1].button(
        "Run until",
        disabled=not active or until_running,
        help="Runs steps until a stop you set under Breakpoints, the last step, or a tool call "
        "awaiting approval. It goes on if you reload; Stop run until ends it.",
    ):
        attempt(lambda: run_until_job.start(runner, task_id, stops))
        st.rerun()
    if columns[2].button("Undo", disabled=not active or not task_state.completed):
        attempt(lambda: runner.undo_step(task_id), success="Undid the last step.")
        st.rerun()
    if columns[3].button("Finalize", disabled=not (active and last and last.is_last)):
        attempt(lambda: runner.finalize_response(task_id), success="Task finished.")
        st.rerun()
    if columns[4].button("Abandon", disabled=not active):
        attempt(lambda: runner.abandon_task(task_id), success="Task abandoned.")
        st.rerun()
    if columns[5].button("New task"):
        _leave_task()
        st.rerun()


def _feedback(runner: ParallelAgentRunner, task_id: str) -> None:
    with st.form("feedback", clear_on_submit=True, border=False):
        text = st.text_input("Add feedback (a message the model reads before its next step)")
        if st.form_submit_button("Add feedback"):
            if not text.strip():
                st.warning("Type the feedback first.")
                return
            attempt(lambda: runner.add_feedback(task_id, text), success="Feedback added.")
            st.rerun()


def _finished(task_state: TaskState) -> None:
    status = task_state.task.status
    last = task_state.last_output
    if status is TaskStatus.COMPLETED and last is not None:
        st.success("Finished. The final answer:")
        st.code("" if last.output is None else str(last.output), language=None, wrap_lines=True)
    elif status is TaskStatus.ABANDONED:
        st.info("This task was abandoned: its steps stay here to inspect. Start a new task.")
    elif last is not None and last.is_last:
        st.caption("The last step ran: finalize the task, or undo to go back.")
    else:
        st.caption("Nothing queued: undo to go back.")


def _upcoming(
    runner: ParallelAgentRunner, task_state: TaskState, *, active: bool
) -> list[tuple[StepRun, Any]]:
    """Draw the queue; returns the steps running in the runtime, with where to stream them."""
    st.subheader("Upcoming steps", anchor=False)
    live = {run.step_id: run for run in runner.running_steps(task_state.task_id)}
    watched = [(run, render_live_step(runner, run)) for run in live.values()]
    steps = task_state.step_queue
    if not steps or task_state.task.status in (TaskStatus.COMPLETED, TaskStatus.ABANDONED):
        _finished(task_state)
    waiting = [step for step in steps if step.step_id not in live]
    if not active:
        status = task_state.task.status
        why = "its model is not set up" if status in _RUNNABLE else f"the task is {status}"
        for step in waiting:
            st.caption(f"{step.kind.value} step (not run: {why})")
        return watched
    human = _human_llm(runner)
    for step in waiting:
        render_upcoming_step(runner, step, ready=task_state.is_ready(step), human=human)
    return watched


def _history(task_state: TaskState) -> None:
    st.subheader("Completed steps", anchor=False)
    total = len(task_state.outputs)
    if not total:
        st.caption("No step has run yet.")
        return
    show_all = total > CARDS_SHOWN and st.checkbox(f"Show all {total} steps", key="show-all")
    newest_first = reversed(task_state.outputs)  # dicts keep commit order: no sort, no copy
    last = task_state.last_output
    for step_id in newest_first if show_all else islice(newest_first, CARDS_SHOWN):
        output = task_state.outputs[step_id]
        if output.task_step.status in _SHOWN_STATUSES:
            render_step_card(output, expanded=output is last)


def _memory(runner: ParallelAgentRunner, task_state: TaskState) -> None:
    with st.expander("What the model sees next"):
        ready = (s for s in task_state.step_queue if task_state.is_ready(s))
        step = next(ready, None)
        if step is None:
            render_memory(runner.preview_messages(task_state.task_id))
        else:
            render_memory(next_prompt(runner, step, step.input))


def _runner_for(task_id: str) -> tuple[ParallelAgentRunner, AgentCoreError | None]:
    """The task's runner, or a read-only one and why its own could not be built.

    A task that can no longer run (finished, abandoned, imported from a trace) is read with
    the reader: its agent is never rebuilt, so a trace naming someone's code imports nothing.
    """
    reader = runtime.reader()
    if reader.get_task(task_id).status not in _RUNNABLE:
        return reader, None
    try:
        return runtime.runner_for(runtime.spec_of(task_id)), None
    except AgentCoreError as exc:  # No key for its provider, say: still show the task.
        return reader, exc


def _problem(problem: AgentCoreError) -> None:
    if isinstance(problem, UserCodeError):
        render_code_error(problem, headline="Read only: your agent could not be loaded.")
        st.caption("Fix your code, then press Reload my code on the New task form.")
    else:
        show_message(
            "warning", str(problem), headline="Read only: this task's model is not set up."
        )


def _task_view(task_id: str) -> None:
    runner, problem = _runner_for(task_id)
    task_state = runner.snapshot_task_state(task_id)  # Steps may commit while this draws.
    status = task_state.task.status
    active = problem is None and status in _RUNNABLE
    _header(task_state)
    if problem is not None:
        _problem(problem)
    until_running = run_until_job.render_running(task_id)
    _controls(runner, task_state, active=active, until_running=until_running)
    left, right = st.columns([3, 2], gap="large")
    with left:
        watched = _upcoming(runner, task_state, active=active)
        if active:
            _feedback(runner, task_id)
        _history(task_state)
    with right:
        st.subheader("Step DAG", anchor=False)
        render_dag(task_state)
        if problem is None:
            _memory(runner, task_state)
    watch_live_steps(watched)  # Last: the rest of the page is drawn while a step streams.
    if until_running:
        run_until_job.wait_while_running(runner, task_id, {run.step_id for run, _ in watched})
    if runner.get_task_state(task_id).version != task_state.version:
        st.rerun()  # A step ended while the page was drawn: show what it left.


state.load_saved_settings()  # Before the notice: a saved setting that cannot be read says so.
current = _current_task_id()
if current is not None:
    run_until_job.report_finished(current)  # Before the notice: this page run shows it.
show_notice()
if current is None:
    render_create_form()
else:
    try:
        _task_view(current)
    except Exception as error:  # Never a traceback on the page; st.rerun() is not an Exception.
        if not isinstance(error, AgentCoreError):
            logger.exception("showing task %s failed", current)
        text = (
            str(error) if isinstance(error, AgentCoreError) else f"{type(error).__name__}: {error}"
        )
        show_message("error", text, headline="This task could not be shown.")
        if st.button("Back to a new task"):
            _leave_task()
            st.rerun()
