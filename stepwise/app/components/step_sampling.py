"""Sample N on an upcoming model step: the spread of its replies, and going on with one.

The runtime sends the step's request N times (`AgentRunner.sample_step`: nothing runs but the
model, nothing is committed) and groups the replies by what the step would do. Each group
shows its share, tokens, cost and mean latency, and "Continue with this" runs the step with
that reply (`continue_with_sample`). The sample is kept per task in the session: after Undo
of the step, another group can be continued with, which grows a branch beside the first.
A step whose request cannot be sent again (a tool step, a framework's agent) greys the
control, with the reason as its help.
"""

from __future__ import annotations

import streamlit as st

from agent_core import ParallelAgentRunner
from agent_core.errors import AgentCoreError
from agent_core.llms.base import ChatMessage
from agent_core.runtime.sampling import DEFAULT_SAMPLES, MAX_SAMPLES, SampleGroup, StepSample
from agent_core.types import TaskStep
from stepwise.app.components import task_version
from stepwise.app.components.actions import show_message

__all__ = ["render_sample_control", "sample_key"]


def sample_key(task_id: str) -> str:
    """The session key of the task's last sample."""
    return f"step-sample-{task_id}"


def _kept_sample(runner: ParallelAgentRunner, step: TaskStep) -> StepSample | None:
    """The task's last sample, if it is of this step's request (Undo makes a new step id)."""
    sample = st.session_state.get(sample_key(step.task_id))
    if not isinstance(sample, StepSample):
        return None
    if sample.step_id == step.step_id:
        return sample
    try:
        now = runner.preview_messages(step.task_id, step.step_id)
    except AgentCoreError:
        return None
    return sample if _dumped(now) == _dumped(sample.messages) else None


def _dumped(messages: list[ChatMessage]) -> list[dict[str, object]]:
    return [m.model_dump(mode="json") for m in messages]


def _on_sample(runner: ParallelAgentRunner, step: TaskStep, count_key: str) -> None:
    n = int(st.session_state.get(count_key) or DEFAULT_SAMPLES)
    try:
        sample = runner.sample_step(step.task_id, step.step_id, n=n)
    except AgentCoreError as error:
        st.session_state[f"{sample_key(step.task_id)}-error"] = error
        return
    st.session_state[sample_key(step.task_id)] = sample


def _on_continue(runner: ParallelAgentRunner, sample: StepSample, group: int) -> None:
    task_version.act(
        runner,
        sample.task_id,
        lambda: runner.continue_with_sample(sample.task_id, sample, group),
        success="Continued with the chosen reply.",
    )


def _usage(group: SampleGroup) -> str:
    cost = "cost unknown" if group.cost_usd is None else f"${group.cost_usd:.4f}"
    return f"{group.tokens:,} tokens · {cost} · {group.latency_ms:,.0f} ms on average"


def _render_group(runner: ParallelAgentRunner, sample: StepSample, index: int) -> None:
    group = sample.groups[index]
    what = {"tool_calls": "calls", "answer": "replies", "error": "fails"}[group.kind]
    st.markdown(f"**{group.share:.0%}** ({group.count} of {sample.n}) {what}:")
    st.code(group.label, language=None, wrap_lines=True)
    st.caption(_usage(group))
    if group.kind != "error":
        st.button(
            "Continue with this",
            key=f"sample-continue-{sample.step_id}-{index}",
            help="Runs the step with this reply as the model's (no new model call).",
            on_click=_on_continue,
            args=(runner, sample, index),
        )


def render_sample_control(runner: ParallelAgentRunner, step: TaskStep) -> None:
    """The "Sample N" control of upcoming step `step`, and its last sample's groups."""
    refusal = runner.sample_refusal(step.task_id, step.step_id)
    count_key = f"sample-n-{step.step_id}"
    with st.expander("Sample N: how else could the model answer?", expanded=False):
        count_col, button_col = st.columns([1, 2], vertical_alignment="bottom")
        count_col.number_input(
            "N", min_value=1, max_value=MAX_SAMPLES, value=DEFAULT_SAMPLES, key=count_key
        )
        button_col.button(
            "Sample N",
            key=f"sample-{step.step_id}",
            disabled=refusal is not None,
            help=f"Not for this step: {refusal}"
            if refusal
            else "Sends this step's request N times; no tool runs and nothing is kept.",
            on_click=_on_sample,
            args=(runner, step, count_key),
        )
        error = st.session_state.pop(f"{sample_key(step.task_id)}-error", None)
        if error is not None:
            show_message("error", error)
        sample = _kept_sample(runner, step)
        if sample is None:
            return
        st.caption(f"{sample.n} replies, {len(sample.groups)} different:")
        for index in range(len(sample.groups)):
            _render_group(runner, sample, index)
