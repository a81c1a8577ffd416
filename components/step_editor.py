"""An upcoming step, editable before it runs: Run, Save, Skip; Approve or Reject a tool call.

A step's input is edited as text: plain text for a reasoning step, JSON for a step whose input
is a JSON object (a tool call's arguments, a plan item). Invalid JSON is refused next to the
step before anything runs. In "you are the model" mode the step also shows the exact prompt
the model gets and a box for its reply.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from agent_core import ParallelAgentRunner
from agent_core.llms.base import ChatMessage
from agent_core.llms.scripted import HumanLLM
from agent_core.types import StepInput, StepKind, StepStatus, TaskStep
from components.actions import attempt, show_message
from components.memory_view import render_memory

__all__ = ["next_prompt", "render_upcoming_step"]

_MODEL_KINDS = (StepKind.LLM, StepKind.PLAN, StepKind.FINALIZE)
"""Steps that call the model once (in "you are the model" mode: one typed reply)."""


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


def next_prompt(runner: ParallelAgentRunner, step: TaskStep, input: StepInput) -> list[ChatMessage]:
    """The messages the model gets when `step` runs with `input`.

    A reasoning (`llm`) step adds its text input to memory as a user message before calling
    the model, so that message is appended to the runner's preview.
    """
    messages = runner.preview_messages(step.task_id)
    if step.kind is StepKind.LLM and isinstance(input, str) and input:
        messages = [*messages, ChatMessage(role="user", content=input)]
    return messages


class _BadInput(ValueError):
    """The edited input cannot be used (invalid JSON...); nothing ran."""


def _as_text(value: StepInput) -> str:
    if isinstance(value, dict):
        return json.dumps(value, indent=2, ensure_ascii=False)
    return value or ""


def _parse_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise _BadInput(f"{what} are not valid JSON: {exc}.") from exc
    if not isinstance(value, dict):
        raise _BadInput(f'{what} must be a JSON object, like {{"a": 1}}.')
    return value


def _edited_input(step: TaskStep, text: str) -> tuple[bool, StepInput]:
    """Whether `text` changes the step's input, and the input it stands for."""
    if text == _as_text(step.input):
        return False, step.input
    if isinstance(step.input, dict):
        return True, _parse_object(text, "The input's fields")
    return True, text or None


def _tool_call(step: TaskStep, args_text: str) -> dict[str, Any]:
    args = _parse_object(args_text, "The arguments")
    call = dict(step.input) if isinstance(step.input, dict) else {}
    return {**call, "args": args}


def _run(runner: ParallelAgentRunner, step: TaskStep, new_input: StepInput, changed: bool) -> None:
    """Start the step in the runtime; the rerun that follows shows it streaming."""
    if changed and new_input is None:
        # run_step(input=None) means "keep the input": clearing it is an edit of its own.
        runner.edit_step(step.task_id, step.step_id, None)
    runner.start_step(step.task_id, step.step_id, new_input if changed else None)


def _refuse(exc: _BadInput) -> None:
    show_message("error", str(exc), headline="Fix the input first; nothing ran.")


def _render_tool_call(runner: ParallelAgentRunner, step: TaskStep, key: str) -> None:
    call = step.input if isinstance(step.input, dict) else {}
    st.caption("Tool")
    st.code(str(call.get("tool", "?")), language=None)
    st.caption("Arguments (JSON, editable)")
    args_text = st.text_area(
        "Arguments",
        json.dumps(call.get("args", {}), indent=2, ensure_ascii=False),
        key=f"args-{key}",
        label_visibility="collapsed",
    )
    reason = ""
    if step.needs_approval:
        reason = st.text_input("Reason to reject (the model reads it)", key=f"reason-{key}")
    run_col, reject_col, skip_col = st.columns(3)
    label = "Approve and run step" if step.needs_approval else "Run step"
    run = run_col.button(label, key=f"run-{key}", type="primary")
    reject = step.needs_approval and reject_col.button("Reject", key=f"reject-{key}")
    skip = skip_col.button("Skip", key=f"skip-{key}")
    if run:
        try:
            new_input = _tool_call(step, args_text)
        except _BadInput as exc:
            _refuse(exc)
            return
        attempt(lambda: _run(runner, step, new_input, new_input != step.input))
        st.rerun()
    if reject:
        attempt(lambda: runner.reject_step(step.task_id, step.step_id, message=reason))
        st.rerun()
    if skip:
        attempt(lambda: runner.skip_step(step.task_id, step.step_id))
        st.rerun()


def _render_human_reply(
    runner: ParallelAgentRunner, step: TaskStep, key: str, new_input: StepInput
) -> str:
    with st.expander("The exact prompt the model gets", expanded=True):
        render_memory(next_prompt(runner, step, new_input), limit=None)
    return st.text_area("You are the model: type its reply", key=f"reply-{key}")


def _render_text_step(
    runner: ParallelAgentRunner, step: TaskStep, key: str, human: HumanLLM | None
) -> None:
    text = st.text_area(
        "Input",
        _as_text(step.input),
        key=f"input-{key}",
        placeholder="(no input: the agent continues; type here to steer it)",
        label_visibility="collapsed",
    )
    try:
        changed, new_input = _edited_input(step, text)
        problem = None
    except _BadInput as exc:
        changed, new_input, problem = True, step.input, exc
    reply = ""
    if human is not None and step.kind in _MODEL_KINDS:
        reply = _render_human_reply(runner, step, key, new_input)
    run_col, save_col, skip_col = st.columns(3)
    run = run_col.button("Run step", key=f"run-{key}", type="primary")
    # Not disabled while unchanged: a browser sends the typed text with the click, and a
    # button enabled only once the text is committed would swallow that first click.
    save = save_col.button("Save edit", key=f"save-{key}")
    skip = skip_col.button("Skip", key=f"skip-{key}")
    if (run or save) and problem is not None:
        _refuse(problem)
        return
    if run:
        if human is not None and reply.strip():
            human.clear()  # A reply typed for an earlier failed attempt must not answer this.
            human.supply(reply)
        attempt(lambda: _run(runner, step, new_input, changed))
        st.rerun()
    if save and not changed:
        st.caption("Nothing to save: the input is unchanged.")
    elif save:
        attempt(lambda: runner.edit_step(step.task_id, step.step_id, new_input), success="Saved.")
        st.rerun()
    if skip:
        attempt(lambda: runner.skip_step(step.task_id, step.step_id))
        st.rerun()


def render_upcoming_step(
    runner: ParallelAgentRunner, step: TaskStep, *, ready: bool, human: HumanLLM | None
) -> None:
    """Draw one upcoming step with its controls; a failed step shows its error to fix."""
    key = f"{step.step_id}-{step.attempts}-{int(step.edited)}"
    with st.container(border=True):
        st.markdown(f"**{_title(runner, step, ready=ready)}**")
        if step.error:
            st.error("This step failed. Edit its input and run it again, or undo.")
            st.code(step.error, language=None, wrap_lines=True)
        if step.kind is StepKind.TOOL:
            _render_tool_call(runner, step, key)
        else:
            _render_text_step(runner, step, key, human)
