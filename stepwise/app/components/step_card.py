"""A step in history as a card: its input or call, thought, actions, output, and costs.

Model and tool text is shown with `st.code`, which never interprets it as markup. The card's
title holds the app's own words and numbers, plus a rejection reason made safe for markdown.
Arguments are shown as the model wrote them (121, not 121.0); a multi-line argument (code, a
file's content) gets a code block of its own instead of one JSON-escaped line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any

import streamlit as st

from agent_core.dag import display_value, format_result, parse_error_of, rejection_of
from agent_core.llms.base import ChatMessage, Usage
from agent_core.types import (
    INTERRUPT_KEY,
    StepInput,
    StepKind,
    StepStatus,
    TaskStep,
    TaskStepOutput,
)
from agent_core.workers.multimodal_react import step_images
from stepwise.app.components.conversation_editor import is_conversation_edit, render_edit_change
from stepwise.app.components.langgraph_view import render_state_after
from stepwise.app.components.memory_view import render_memory
from stepwise.app.components.messages import cost_text, note_text, plain, plural, tokens_text
from stepwise.app.components.task_images import render_thumbnails

__all__ = ["card_title", "render_call", "render_step_card", "render_traceback", "usage_text"]

_BLOCK_MIN_CHARS = 200
"""A string argument this long gets its own block even on one line."""
_REASON_SHOWN_CHARS = 60
_LANGUAGES = {
    ".py": "python",
    ".html": "html",
    ".htm": "html",
    ".svg": "xml",
    ".xml": "xml",
    ".json": "json",
    ".js": "javascript",
    ".css": "css",
    ".md": "markdown",
    ".sh": "bash",
    ".sql": "sql",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
}
_CODE_ARGS = ("code", "source", "script", "program")


def usage_text(usage: Usage) -> list[str]:
    """Tokens and cost as title parts ("120 tokens", "≈120 tokens" estimated, "$0.0012").

    None when no model ran.
    """
    if not usage.total_tokens and not usage.cost_usd:
        return []
    return [tokens_text(usage), cost_text(usage.cost_usd)]


def _reason_label(reason: str) -> str:
    flat = " ".join(reason.split())
    if not flat:
        return "rejected"
    if len(flat) > _REASON_SHOWN_CHARS:
        flat = flat[: _REASON_SHOWN_CHARS - 1].rstrip() + "…"
    return f'rejected: "{plain(flat)}"'


def _was_skipped(output: TaskStepOutput) -> bool:
    """A person skipped the step: it never ran (a skip stored before `skipped` by status)."""
    return output.skipped or output.task_step.status is StepStatus.SKIPPED


def card_title(output: TaskStepOutput) -> str:
    """One line: number, kind, status, tokens, cost and latency (user text only escaped)."""
    step = output.task_step
    parts = [f"Step {step.number or '?'} · {step.kind.value}"]
    name = step.name or _tool_name(step)  # The framework's own words, or the tool it calls.
    if name:
        parts.append(plain(name))
    if step.status is StepStatus.UNDONE and output.skipped:
        parts.append("skip undone")  # It never ran: "undone" alone reads as a run taken back.
    elif step.status is not StepStatus.COMPLETED:
        parts.append(step.status.value)
    rejection = rejection_of(step, output)
    if rejection is not None:
        parts.append(_reason_label(rejection))
    elif step.edited:
        parts.append("edited")
    if step.kind is not StepKind.HUMAN and not _was_skipped(output):
        parts += usage_text(output.usage)
        parts.append(f"{output.latency_ms:,.0f} ms")
    if output.is_last and step.status is StepStatus.COMPLETED:
        parts.append("last step")
    return " · ".join(part for part in parts if part)


# ------------------------------------------------------------------------------- pieces


def _text(value: StepInput | object, *, empty: str = "(none)") -> str:
    if value is None:
        return empty
    if isinstance(value, str):
        return value
    return json.dumps(display_value(value), indent=2, ensure_ascii=False, default=str)


def _code(text: str, *, language: str | None = None) -> None:
    st.code(text, language=language, wrap_lines=True)


def _is_block(value: object) -> bool:
    return isinstance(value, str) and ("\n" in value.strip() or len(value) >= _BLOCK_MIN_CHARS)


def _language(name: str, args: Mapping[str, Any]) -> str | None:
    """How to colour argument `name`: code as Python, a file's content by the file's type."""
    if name in _CODE_ARGS:
        return "python"
    path = args.get("path") or args.get("file") or args.get("filename")
    if isinstance(path, str):
        return _LANGUAGES.get(PurePosixPath(path).suffix.lower())
    return None


def _tool_name(step: TaskStep) -> str | None:
    """The tool a tool step calls, when its input is one well-formed call."""
    call = _call_of(_shown_input(step)) if step.kind is StepKind.TOOL else None
    return call[0] if call is not None else None


def _call_of(value: StepInput) -> tuple[str, Mapping[str, Any]] | None:
    """The (tool, args) a tool step's input holds, if it is a well-formed call."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, Mapping):
        return None
    tool, args = value.get("tool"), value.get("args", {})
    if isinstance(tool, str) and isinstance(args, Mapping):
        return tool, args
    return None


def render_call(tool: str, args: Mapping[str, Any]) -> None:
    """A tool call: ``tool({...})`` on one line, each multi-line argument in a block below it."""
    inline = []
    blocks = []
    for name, value in args.items():
        if _is_block(value):
            blocks.append((name, value))
            inline.append(f"{json.dumps(name, ensure_ascii=False)}: …")
        else:
            inline.append(
                f"{json.dumps(name, ensure_ascii=False)}: "
                f"{json.dumps(display_value(value), ensure_ascii=False, default=str)}"
            )
    _code(f"{tool}({{{', '.join(inline)}}})")
    for name, value in blocks:
        st.caption(f"Argument {plain(json.dumps(name, ensure_ascii=False))}")
        _code(value, language=_language(name, args))


def _render_value(value: StepInput, *, empty: str = "(no input)") -> None:
    """A step input: a tool call as a call, anything else as text or JSON."""
    call = _call_of(value) if isinstance(value, Mapping) else None
    if call is not None:
        render_call(*call)
    else:
        _code(_text(value, empty=empty))


def _shown_input(step: TaskStep) -> StepInput:
    # An older reject_step put its reason into the call; the card shows the reason apart.
    if isinstance(step.input, Mapping) and "rejected" in step.input:
        return {key: value for key, value in step.input.items() if key != "rejected"}
    return step.input


def _render_input(output: TaskStepOutput, *, rejected: bool) -> None:
    step = output.task_step
    shown = _shown_input(step)
    if step.edited and not rejected:
        proposed, ran = st.columns(2)
        with proposed:
            st.caption("Proposed by the agent")
            _render_value(step.proposed_input)
        with ran:
            st.caption("What ran (edited by you)")
            _render_value(shown)
    elif shown is not None:
        if is_conversation_edit(step):
            caption = "You edited the conversation the model reads next"
        elif step.kind is StepKind.HUMAN:
            caption = "Your feedback"
        elif rejected:
            caption = "The call the agent proposed"
        elif step.kind is StepKind.TOOL:
            caption = "Call"
        else:
            caption = "Input"
        st.caption(caption)
        _render_value(shown)


def _render_answered_question(output: TaskStepOutput) -> None:
    """A question the agent asked (a LangGraph interrupt), your answer, and what came of it."""
    step = output.task_step
    st.caption("The agent asked")
    _render_value(step.step_state[INTERRUPT_KEY])
    st.caption("Your answer")
    _render_value(step.input)
    if output.output is not None:
        st.caption("What the agent did with it")
        _render_value(output.output)


def _render_calls(output: TaskStepOutput, *, rejected: bool) -> None:
    step = output.task_step
    raw = _call_of(_shown_input(step)) if step.kind is StepKind.TOOL else None
    for call in output.tool_calls:
        if rejected:
            st.caption("What the model was told instead")
            _code(call.content)
            continue
        if raw is None:  # A tool step's call is shown as its input already.
            st.caption("Action (failed)" if call.is_error else "Action")
            render_call(call.tool_name, call.args)
        st.caption("Result (an error)" if call.is_error else "Result")
        _code(format_result(call.content))


def _render_components(output: TaskStepOutput) -> None:
    """Each pipeline component the step ran, in order: name, latency, inputs and output."""
    count = len(output.components)
    for number, run in enumerate(output.components, start=1):
        st.caption(f"Component {number} of {count}: {plain(run.name)} · {run.latency_ms:,.0f} ms")
        if run.inputs:
            _code(_text(run.inputs), language="json")
        _code(_text(run.output, empty="(returned None)"))


def _render_output(output: TaskStepOutput) -> None:
    shown = output.output
    results = {call.content for call in output.tool_calls}
    if output.task_step.kind is StepKind.TOOL and (shown is None or str(shown) in results):
        return  # The result is on the card already.
    if isinstance(shown, str) and output.task_step.kind is StepKind.TOOL:
        shown = format_result(shown)
    st.caption("Output")
    _code(_text(shown))


def _render_messages_sent(
    output: TaskStepOutput, *, key: str, load: Callable[[], list[ChatMessage]] | None
) -> None:
    """A toggle that shows the messages the step sent; they are read only when opened."""
    if output.task_step.kind in (StepKind.TOOL, StepKind.HUMAN) and not output.messages_sent:
        return  # Such steps call no model.
    if not st.toggle("Messages sent to the model", key=f"{key}-sent"):
        return
    messages = output.messages_sent or (load() if load is not None else [])
    if not messages:
        st.caption("This step sent nothing to a model.")
        return
    st.caption(plural(len(messages), "message"))
    render_memory(list(messages), key=f"{key}-sent")


def render_traceback(step: TaskStep) -> None:
    """Where a failed step's error was raised, when code outside Stepwise raised it.

    The runtime records the traceback of the user's worker or of a framework, trimmed of its
    own frames (`error_params["traceback"]`), so a failure after a reload still shows it.
    """
    where = step.error_params.get("traceback")
    if not isinstance(where, str) or not where:
        return
    with st.expander("Traceback (where your code or its framework raised it)"):
        st.code(where, language="python", wrap_lines=True)


def render_step_card(
    output: TaskStepOutput,
    *,
    expanded: bool = False,
    key: str = "card",
    load_messages_sent: Callable[[], list[ChatMessage]] | None = None,
    controls: Callable[[str], None] | None = None,
    conversation: tuple[list[ChatMessage], list[ChatMessage]] | None = None,
) -> None:
    """Draw one step of history (completed, skipped or undone).

    `key` prefixes the card's widget keys; a page drawing the same step twice passes another.
    `load_messages_sent` reads the step's prompt (stored apart) when its toggle is opened.
    `controls(key)` draws the page's buttons for the step (Undo to here...) at the card's top.
    `conversation` is the conversation before and after a conversation edit step, to show
    what the edit changed.
    """
    step = output.task_step
    card_key = f"{key}-{step.step_id}"
    rejection = rejection_of(step, output)
    with st.expander(card_title(output), expanded=expanded):
        if controls is not None:
            controls(card_key)
        _render_body(output, card_key, load_messages_sent, conversation, rejection)


def _render_body(
    output: TaskStepOutput,
    card_key: str,
    load_messages_sent: Callable[[], list[ChatMessage]] | None,
    conversation: tuple[list[ChatMessage], list[ChatMessage]] | None,
    rejection: str | None,
) -> None:
    step = output.task_step
    if _was_skipped(output):
        st.caption("Skipped: this step did not run.")
    if rejection is not None:
        st.caption("You rejected this call, so it did not run. Your reason:")
        _code(rejection or "(no reason given)")
    # Notes came with the runtime's StepNote; a step stored before it has none.
    for note in getattr(output, "notes", ()):
        st.info(plain(note_text(note.code, note.message)))
    if step.kind is StepKind.HUMAN and INTERRUPT_KEY in step.step_state:
        _render_answered_question(output)
        return
    _render_input(output, rejected=rejection is not None)
    if conversation is not None:
        render_edit_change(*conversation)
    render_thumbnails(step_images(step))
    if step.kind is not StepKind.HUMAN and not _was_skipped(output):
        _render_run(output, card_key, load_messages_sent, rejection)
    render_state_after(step)  # A LangGraph step's checkpoint, as Studio shows it.


def _render_run(
    output: TaskStepOutput,
    card_key: str,
    load_messages_sent: Callable[[], list[ChatMessage]] | None,
    rejection: str | None,
) -> None:
    """What a step that ran did: its thought, calls, output, errors and prompt."""
    step = output.task_step
    if output.thought:
        st.caption("Thought")
        _code(output.thought)
    _render_calls(output, rejected=rejection is not None)
    _render_components(output)
    if rejection is None:
        _render_output(output)
    if output.error:
        st.caption("Error")
        _code(output.error)
    parse_error = parse_error_of(output)
    if parse_error is not None:
        st.caption("The reply could not be read as ReAct; the model was told:")
        _code(parse_error)
    _render_messages_sent(output, key=card_key, load=load_messages_sent)
    if step.undo_warnings:
        st.warning("Undo could not revert everything this step did:")
        _code("\n".join(step.undo_warnings))
