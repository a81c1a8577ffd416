"""A completed (or undone) step as a card: thought, action, observation, output, and costs.

Model and tool text is shown with `st.code`/`st.text`, which never interpret it as markup.
"""

from __future__ import annotations

import json

import streamlit as st

from agent_core.types import StepInput, StepStatus, TaskStepOutput

__all__ = ["card_title", "render_step_card"]


def _text(value: StepInput | object) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def card_title(output: TaskStepOutput) -> str:
    """One line: number, kind, status, tokens, cost and latency."""
    step = output.task_step
    usage = output.usage
    parts = [f"Step {step.number or '?'} · {step.kind.value}"]
    if step.status is not StepStatus.COMPLETED:
        parts.append(step.status.value)
    if step.edited:
        parts.append("edited")
    if usage.total_tokens:
        parts.append(f"{usage.total_tokens:,} tokens")
    if usage.cost_usd is not None:
        parts.append(f"${usage.cost_usd:.4f}")
    parts.append(f"{output.latency_ms:,.0f} ms")
    if output.is_last:
        parts.append("last step")
    return " · ".join(parts)


def render_step_card(output: TaskStepOutput, *, expanded: bool = False) -> None:
    """Draw one completed or undone step."""
    step = output.task_step
    with st.expander(card_title(output), expanded=expanded):
        if step.edited:
            proposed, ran = st.columns(2)
            proposed.caption("Proposed by the agent")
            proposed.code(_text(step.proposed_input), language=None, wrap_lines=True)
            ran.caption("What ran (edited by you)")
            ran.code(_text(step.input), language=None, wrap_lines=True)
        elif step.input is not None:
            st.caption("Input")
            st.code(_text(step.input), language=None, wrap_lines=True)
        if output.thought:
            st.caption("Thought")
            st.code(output.thought, language=None, wrap_lines=True)
        for call in output.tool_calls:
            st.caption(f"Action: {call.tool_name}" + (" (error)" if call.is_error else ""))
            st.code(json.dumps(call.args, ensure_ascii=False), language="json", wrap_lines=True)
            st.caption("Observation")
            st.code(call.content, language=None, wrap_lines=True)
        st.caption("Output")
        st.code(_text(output.output), language=None, wrap_lines=True)
        for warning in step.undo_warnings:
            st.warning(f"Undo could not revert: {warning}")
