"""A completed (or undone) step as a card: thought, action, observation, output, and costs.

Model and tool text is shown with `st.code`, which never interprets it as markup; captions
and the card's title hold only the app's own words and numbers.
"""

from __future__ import annotations

import json

import streamlit as st

from agent_core.types import StepInput, StepKind, StepStatus, TaskStepOutput

__all__ = ["card_title", "render_step_card"]


def _text(value: StepInput | object, *, empty: str = "(none)") -> str:
    if value is None:
        return empty
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _code(text: str, *, language: str | None = None) -> None:
    st.code(text, language=language, wrap_lines=True)


def card_title(output: TaskStepOutput) -> str:
    """One line: number, kind, status, tokens, cost and latency (no model text)."""
    step = output.task_step
    usage = output.usage
    parts = [f"Step {step.number or '?'} · {step.kind.value}"]
    if step.status is not StepStatus.COMPLETED:
        parts.append(step.status.value)
    if step.edited:
        parts.append("edited")
    if step.kind is not StepKind.HUMAN:
        parts.append(f"{usage.total_tokens:,} tokens")
        if usage.cost_usd is not None:
            parts.append(f"${usage.cost_usd:.4f}")
        elif usage.total_tokens:  # A model ran at no known price (a step without one costs 0).
            parts.append("cost unknown")
        parts.append(f"{output.latency_ms:,.0f} ms")
    if output.is_last:
        parts.append("last step")
    return " · ".join(parts)


def _render_input(output: TaskStepOutput) -> None:
    step = output.task_step
    if step.edited:
        proposed, ran = st.columns(2)
        with proposed:
            st.caption("Proposed by the agent")
            _code(_text(step.proposed_input, empty="(no input)"))
        with ran:
            st.caption("What ran (edited by you)")
            _code(_text(step.input, empty="(no input)"))
    elif step.input is not None:
        st.caption("Your feedback" if step.kind is StepKind.HUMAN else "Input")
        _code(_text(step.input))


def render_step_card(output: TaskStepOutput, *, expanded: bool = False) -> None:
    """Draw one completed or undone step."""
    step = output.task_step
    with st.expander(card_title(output), expanded=expanded):
        _render_input(output)
        if step.kind is StepKind.HUMAN:
            return
        if output.thought:
            st.caption("Thought")
            _code(output.thought)
        for call in output.tool_calls:
            st.caption("Action (failed)" if call.is_error else "Action")
            _code(f"{call.tool_name}({json.dumps(call.args, ensure_ascii=False)})")
            st.caption("Observation")
            _code(call.content)
        st.caption("Output")
        _code(_text(output.output))
        if output.error:
            st.caption("Error")
            _code(output.error)
        if step.undo_warnings:
            st.warning("Undo could not revert everything this step did:")
            _code("\n".join(step.undo_warnings))
