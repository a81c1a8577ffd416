"""An upcoming step, editable before it runs: Run, Save, Skip; Approve or Reject a tool call."""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from agent_core import ParallelAgentRunner
from agent_core.llms.scripted import HumanLLM
from agent_core.types import StepInput, StepKind, StepStatus, TaskStep
from components.actions import attempt, stream_into
from components.memory_view import render_memory

__all__ = ["render_upcoming_step"]


def _title(runner: ParallelAgentRunner, step: TaskStep, *, ready: bool) -> str:
    parts = [f"Upcoming {step.kind.value} step"]
    if step.needs_approval:
        parts.append("tool call awaiting your approval")
    if step.status is StepStatus.FAILED:
        parts.append(f"failed (attempt {step.attempts})")
    if step.status is StepStatus.RUNNING:
        interrupted = runner.is_interrupted(step.task_id, step.step_id)
        parts.append("interrupted: run it again" if interrupted else "running")
    if step.edited:
        parts.append("edited")
    if not ready:
        parts.append("waits for earlier steps")
    return " · ".join(parts)


def _edited_text_input(step: TaskStep, text: str) -> tuple[bool, StepInput]:
    original = step.input if isinstance(step.input, str) else ""
    if text == original:
        return False, step.input
    return True, text or None


def _tool_call(step: TaskStep, args_text: str) -> dict[str, Any]:
    args = json.loads(args_text)
    if not isinstance(args, dict):
        raise ValueError('the arguments must be a JSON object, like {"a": 1}')
    call = dict(step.input) if isinstance(step.input, dict) else {}
    return {**call, "args": args}


def _run(runner: ParallelAgentRunner, step: TaskStep, new_input: StepInput, changed: bool) -> None:
    placeholder = st.empty()
    events = runner.stream_step(step.task_id, step.step_id, new_input if changed else None)
    stream_into(events, placeholder)


def _render_tool_call(runner: ParallelAgentRunner, step: TaskStep, key: str) -> None:
    call = step.input if isinstance(step.input, dict) else {}
    st.caption(f"Tool: {call.get('tool', '?')} · arguments (JSON, editable)")
    args_text = st.text_area(
        "Arguments",
        json.dumps(call.get("args", {}), indent=2, ensure_ascii=False),
        key=f"args-{key}",
        label_visibility="collapsed",
    )
    reason = st.text_input("Reason to reject (the model reads it)", key=f"reason-{key}")
    approve, reject, skip = st.columns(3)
    if approve.button("Approve and run", key=f"approve-{key}", type="primary"):
        try:
            new_input = _tool_call(step, args_text)
        except ValueError as exc:
            st.error(f"Fix the arguments first: {exc}")
            return
        changed = new_input != step.input
        attempt(lambda: _run(runner, step, new_input, changed))
        st.rerun()
    if reject.button("Reject", key=f"reject-{key}"):
        attempt(lambda: runner.reject_step(step.task_id, step.step_id, message=reason))
        st.rerun()
    if skip.button("Skip", key=f"skip-{key}"):
        attempt(lambda: runner.skip_step(step.task_id, step.step_id))
        st.rerun()


def _render_text_step(
    runner: ParallelAgentRunner, step: TaskStep, key: str, human: HumanLLM | None
) -> None:
    text = st.text_area(
        "Input",
        step.input if isinstance(step.input, str) else "",
        key=f"input-{key}",
        placeholder="(no input: the agent continues; type here to steer it)",
        label_visibility="collapsed",
    )
    reply = ""
    if human is not None and step.kind in (StepKind.LLM, StepKind.PLAN, StepKind.FINALIZE):
        with st.expander("The exact prompt the model gets", expanded=True):
            render_memory(runner.preview_messages(step.task_id))
        reply = st.text_area("You are the model: type its reply", key=f"reply-{key}")
    run, save, skip = st.columns(3)
    changed, new_input = _edited_text_input(step, text)
    if run.button("Run step", key=f"run-{key}", type="primary"):
        if human is not None and reply.strip():
            human.supply(reply)
        attempt(lambda: _run(runner, step, new_input, changed))
        st.rerun()
    if save.button("Save edit", key=f"save-{key}", disabled=not changed):
        attempt(lambda: runner.edit_step(step.task_id, step.step_id, new_input), success="Saved.")
        st.rerun()
    if skip.button("Skip", key=f"skip-{key}"):
        attempt(lambda: runner.skip_step(step.task_id, step.step_id))
        st.rerun()


def render_upcoming_step(
    runner: ParallelAgentRunner, step: TaskStep, *, ready: bool, human: HumanLLM | None
) -> None:
    """Draw one upcoming step with its controls."""
    key = f"{step.step_id}-{step.attempts}-{int(step.edited)}"
    with st.container(border=True):
        st.markdown(f"**{_title(runner, step, ready=ready)}**")
        if step.error:
            st.caption("Error (edit the input and run it again, or undo)")
            st.code(step.error, language=None, wrap_lines=True)
        if step.kind is StepKind.TOOL:
            _render_tool_call(runner, step, key)
        else:
            _render_text_step(runner, step, key, human)
