"""Edit the conversation the model reads next, and show what an edit changed on its card.

The editor lists the task's conversation (`Task.memory`, not the worker's prompt around it):
change a message's text, drop messages, add a user message; "Save as a step" records the
edit with `AgentRunner.edit_conversation`, as a `human` step that Undo reverts. Every text
that came from a model, a tool or a person is shown in a text area or with `st.code`, never
through markdown or HTML.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import streamlit as st

from agent_core import ParallelAgentRunner
from agent_core.llms.base import ChatMessage
from agent_core.runtime.conversation_edit import CONVERSATION_EDIT, CONVERSATION_EDIT_KEY
from agent_core.types import StepStatus, TaskState, TaskStep
from stepwise.app.components import task_version
from stepwise.app.components.actions import show_notice
from stepwise.app.components.memory_view import PAGE_SIZE, message_text, page_bounds

__all__ = [
    "EDITOR",
    "EditRow",
    "conversation_around",
    "edit_reason",
    "edit_rows",
    "is_conversation_edit",
    "render_conversation_editor",
    "render_edit_change",
]

EDITOR = "conversation-editor"
"""Where the editor's notices show (`actions.show_notice`)."""
_ROLES = {"system": "system", "user": "user", "assistant": "the model", "tool": "tool result"}


def is_conversation_edit(step: TaskStep) -> bool:
    """Whether `step` is a person's edit of the conversation (`edit_conversation`)."""
    return step.name == CONVERSATION_EDIT and CONVERSATION_EDIT_KEY in step.step_state


def edit_reason(runner: ParallelAgentRunner, task_state: TaskState, *, answered: bool) -> str:
    """Why the conversation cannot be edited now ("" when it can), for a greyed control."""
    own = getattr(runner.agent_worker, "keeps_own_conversation", None)
    if own:  # A framework keeps its conversation itself: editing ours would change nothing.
        return f"Not for this agent: {own}, so Stepwise cannot edit what its model reads."
    if answered:
        return "The agent answered: press Undo to go back before the answer, then edit."
    if not task_state.queue:
        return "Nothing is queued, so no step would read an edit: press Undo to go back."
    return ""


# --- the editor -----------------------------------------------------------------------------


def _key(task_state: TaskState, name: str) -> str:
    # Tied to the version: after any step the editor opens on the conversation as it is then.
    return f"edit-{name}-{task_state.task_id}-{task_state.version}"


def render_conversation_editor(
    runner: ParallelAgentRunner, task_state: TaskState, *, reason: str
) -> None:
    """A toggle that opens the editor; greyed with `reason` when editing cannot work now."""
    on = st.toggle(
        "Edit the conversation",
        key=f"edit-open-{task_state.task_id}",
        disabled=bool(reason),
        help=reason
        or "Change a message's text, drop messages or add one; saved as a step Undo reverts.",
    )
    show_notice(where=EDITOR)
    if not on or reason:
        return
    messages = task_state.task.memory.get_all()
    start, end = _page(task_state, len(messages))
    with st.form(_key(task_state, "form"), border=True):
        if not messages:
            st.caption("The conversation is empty so far: add a message below.")
        for index in range(start, end):
            _message_fields(task_state, index, messages[index])
        st.text_area("Add a user message at the end", key=_key(task_state, "added"))
        st.form_submit_button(
            "Save as a step", type="primary", on_click=_save, args=(runner, task_state, messages)
        )


def _page(task_state: TaskState, count: int) -> tuple[int, int]:
    """The messages the editor shows: all, or one page of a long conversation."""
    if count <= PAGE_SIZE:
        return 0, count
    pages = -(-count // PAGE_SIZE)
    page = st.selectbox(
        "Messages to edit",
        range(pages),
        index=pages - 1,
        format_func=lambda p: _page_label(*page_bounds(count, p)),
        key=_key(task_state, "page"),
    )
    return page_bounds(count, page or 0)


def _page_label(start: int, end: int) -> str:
    return f"Messages {start + 1} to {end}"


def _message_fields(task_state: TaskState, index: int, message: ChatMessage) -> None:
    number = index + 1
    st.caption(f"Message {number} · {_ROLES.get(message.role, message.role)}")
    if message.tool_calls or message.tool_call_id:
        # The calls and their ids stay as they are: a result must keep answering its call.
        st.code(message_text(message.model_copy(update={"content": ""})), language=None)
    st.text_area(
        f"Text of message {number}",
        value=message.content,
        key=_key(task_state, f"text-{index}"),
        disabled=bool(message.images),
        help="It shows images: keep it or drop it." if message.images else None,
        label_visibility="collapsed",
    )
    st.checkbox(f"Drop message {number}", key=_key(task_state, f"drop-{index}"))


def _edited(task_state: TaskState, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The conversation as the form now says: changed texts, dropped and added messages."""
    result = []
    for index, message in enumerate(messages):
        if st.session_state.get(_key(task_state, f"drop-{index}")):
            continue
        text = st.session_state.get(_key(task_state, f"text-{index}"), message.content)
        changed = text != message.content and not message.images
        result.append(message.model_copy(update={"content": text}) if changed else message)
    added = st.session_state.get(_key(task_state, "added"), "")
    if added.strip():
        result.append(ChatMessage(role="user", content=added))
    return result


def _save(
    runner: ParallelAgentRunner, task_state: TaskState, messages: Sequence[ChatMessage]
) -> None:
    edited = _edited(task_state, messages)
    task_id = task_state.task_id
    task_version.act(
        runner,
        task_id,
        lambda: runner.edit_conversation(task_id, edited),
        success="Saved your edit as a step; Undo reverts it.",
        where=EDITOR,
    )


# --- what an edit changed, on its step's card -----------------------------------------------


@dataclass(frozen=True)
class EditRow:
    """One message an edit touched: `kind` is changed, dropped or added."""

    kind: str
    number: int
    """Its number (1-based) before the edit, as the editor showed it; a new message's follows
    the last one's (`ConversationChange`'s numbers, so no message is renumbered)."""
    before: ChatMessage | None
    after: ChatMessage | None


def edit_rows(before: Sequence[ChatMessage], after: Sequence[ChatMessage]) -> Iterator[EditRow]:
    """The messages an edit changed, dropped and added, paired as the runtime counts them."""
    old = [m.model_dump_json() for m in before]
    new = [m.model_dump_json() for m in after]
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    fresh = len(before)  # The last number before the edit: a new message's follows it.
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(paired):
            yield EditRow("changed", i1 + k + 1, before[i1 + k], after[j1 + k])
        for i in range(i1 + paired, i2):
            yield EditRow("dropped", i + 1, before[i], None)
        for j in range(j1 + paired, j2):
            fresh += 1
            yield EditRow("added", fresh, None, after[j])


def conversation_around(
    task_state: TaskState, step_id: str
) -> tuple[list[ChatMessage], list[ChatMessage]] | None:
    """The conversation just before and just after edit step `step_id`; None if unknown.

    The edit's snapshot holds the conversation before it. The one after it is what the next
    completed step started from: its snapshot's messages, or the conversation now cut to its
    snapshot's length (a later edit's snapshot holds a longer one).
    """
    snapshot = task_state.snapshots.get(step_id)
    step = task_state.steps.get(step_id)
    if snapshot is None or snapshot.memory.messages is None or step is None:
        return None
    if step.status is not StepStatus.COMPLETED or step_id not in task_state.completed:
        return None
    later = task_state.completed[task_state.completed.index(step_id) + 1 :]
    after = task_state.task.memory.get_all()
    for later_id in reversed(later):  # Walk back from now to just after the edit.
        memory = task_state.snapshots[later_id].memory if later_id in task_state.snapshots else None
        if memory is None:
            return None
        after = list(memory.messages) if memory.messages is not None else after[: memory.length]
    return list(snapshot.memory.messages), after


def render_edit_change(
    before: Sequence[ChatMessage] | None, after: Sequence[ChatMessage] | None
) -> None:
    """Each message an edit changed (before and after), dropped or added, as plain text."""
    if before is None or after is None:
        return
    for row in edit_rows(before, after):
        shown = row.after or row.before
        role = _ROLES.get(shown.role, shown.role) if shown is not None else "message"
        st.caption(f"Message {row.number} ({role}) {row.kind}")
        if row.kind == "changed" and row.before is not None and row.after is not None:
            was, now = st.columns(2)
            with was:
                st.caption("Before")
                st.code(message_text(row.before), language=None, wrap_lines=True)
            with now:
                st.caption("After")
                st.code(message_text(row.after), language=None, wrap_lines=True)
        elif shown is not None:
            st.code(message_text(shown), language=None, wrap_lines=True)
