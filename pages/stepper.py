"""Stepper: run a task one step at a time, steer it, undo it, and watch its DAG grow."""

from __future__ import annotations

import streamlit as st

from agent_core import AtStep, CostOver, OnTool, ParallelAgentRunner
from agent_core.breakpoints import Breakpoint
from agent_core.errors import AgentCoreError
from agent_core.llms.scripted import HumanLLM
from agent_core.types import StepStatus, TaskState, TaskStatus
from components import runtime, state
from components.actions import attempt, show_notice
from components.dag_view import render_dag
from components.memory_view import render_memory
from components.step_card import render_step_card
from components.step_editor import render_upcoming_step
from components.task_form import model_label, render_create_form

CARDS_SHOWN = 25


def _human_llm(runner: ParallelAgentRunner) -> HumanLLM | None:
    llm = getattr(runner.agent_worker, "llm", None)
    return llm if isinstance(llm, HumanLLM) else None


def _header(runner: ParallelAgentRunner, task_state: TaskState) -> None:
    task = task_state.task
    st.subheader(task.input[:200] + ("…" if len(task.input) > 200 else ""), anchor=False)
    usage = task.usage
    cost = f"${usage.cost_usd:.4f}" if usage.cost_usd is not None else "cost unknown"
    st.caption(
        f"Status: **{task.status.value}** · {len(task_state.completed)} steps done · "
        f"{len(task_state.queue)} upcoming · {usage.total_tokens:,} tokens · {cost}"
    )
    st.caption(f"Model: {model_label(runtime.spec_of(task.task_id))}")


def _breakpoints() -> list[Breakpoint]:
    with st.popover("Breakpoints"):
        before_tools = st.checkbox("Before any tool step", key="bp-tools")
        tool = st.text_input("On tool named", key="bp-tool")
        at_step = st.number_input("At step number", min_value=0, step=1, key="bp-step")
        cost = st.number_input("When cost is over $", min_value=0.0, step=0.01, key="bp-cost")
    chosen: list[Breakpoint] = []
    if before_tools:
        chosen.append(OnTool())
    if tool.strip():
        chosen.append(OnTool(tool.strip()))
    if at_step:
        chosen.append(AtStep(int(at_step)))
    if cost:
        chosen.append(CostOver(float(cost)))
    return chosen


def _run_until(runner: ParallelAgentRunner, task_id: str, stops: list[Breakpoint]) -> None:
    result = runner.run_until(task_id, stop=stops)
    state.push_notice(
        "info",
        f"Ran {len(result.outputs)} steps; stopped: {result.reason}. {result.detail}".strip(),
    )


def _controls(runner: ParallelAgentRunner, task_state: TaskState) -> None:
    task_id = task_state.task_id
    active = task_state.task.status in (TaskStatus.ACTIVE, TaskStatus.FAILED)
    last = task_state.last_output
    columns = st.columns(6)
    stops = _breakpoints() if active else []
    if columns[0].button(
        "Run ready steps",
        disabled=not active,
        help="Runs every ready step at once (parallel plan items and tool calls).",
    ):
        attempt(lambda: runner.run_steps_in_queue(task_id))
        st.rerun()
    if columns[1].button("Run until", disabled=not active):
        attempt(lambda: _run_until(runner, task_id, stops))
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
        state.set_current_task_id(None)
        st.rerun()


def _feedback(runner: ParallelAgentRunner, task_id: str) -> None:
    with st.form("feedback", clear_on_submit=True, border=False):
        text = st.text_input("Add feedback (a message the model reads before its next step)")
        if st.form_submit_button("Add feedback") and text.strip():
            attempt(lambda: runner.add_feedback(task_id, text), success="Feedback added.")
            st.rerun()


def _upcoming(runner: ParallelAgentRunner, task_state: TaskState) -> None:
    st.markdown("#### Upcoming steps")
    steps = task_state.step_queue
    if not steps:
        last = task_state.last_output
        done = last is not None and last.is_last
        st.caption("Done: finalize the task." if done else "Nothing queued: undo to go back.")
        return
    human = _human_llm(runner)
    active = task_state.task.status in (TaskStatus.ACTIVE, TaskStatus.FAILED)
    for step in steps:
        if active:
            render_upcoming_step(runner, step, ready=task_state.is_ready(step), human=human)
        else:
            st.caption(f"{step.kind.value} step (not run: the task is {task_state.task.status})")


def _history(task_state: TaskState) -> None:
    st.markdown("#### Completed steps")
    outputs = list(task_state.outputs.values())
    if not outputs:
        st.caption("No step has run yet.")
        return
    show_all = len(outputs) > CARDS_SHOWN and st.checkbox(f"Show all {len(outputs)} steps")
    shown = outputs if show_all else outputs[-CARDS_SHOWN:]
    for output in reversed(shown):
        if output.task_step.status in (StepStatus.COMPLETED, StepStatus.UNDONE):
            render_step_card(output, expanded=output is task_state.last_output)


def _task_view(task_id: str) -> None:
    runner = runtime.runner_for(runtime.spec_of(task_id))
    task_state = runner.get_task_state(task_id)
    _header(runner, task_state)
    _controls(runner, task_state)
    left, right = st.columns([3, 2], gap="large")
    with left:
        _upcoming(runner, task_state)
        if task_state.task.status in (TaskStatus.ACTIVE, TaskStatus.FAILED):
            _feedback(runner, task_id)
        _history(task_state)
    with right:
        st.markdown("#### Step DAG")
        render_dag(task_state)
        with st.expander("What the model sees next"):
            render_memory(runner.preview_messages(task_id))


show_notice()
task_id = state.current_task_id()
if task_id is None:
    render_create_form()
else:
    try:
        _task_view(task_id)
    except AgentCoreError as error:
        st.error("This task could not be shown.")
        st.code(str(error), language=None, wrap_lines=True)
        if st.button("Back to a new task"):
            state.set_current_task_id(None)
            st.rerun()
