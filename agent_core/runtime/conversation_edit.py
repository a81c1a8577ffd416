"""A person's edit of the conversation a task's model reads next, checked and described.

`AgentRunner.edit_conversation` records the edit as a `human` step; this module checks that
the edited messages still make a conversation a model accepts (every tool result answers a
call, every call has its result) and says what changed, for the step's card and its trace.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from agent_core.errors import UserError
from agent_core.llms.base import ChatMessage

__all__ = [
    "CONVERSATION_EDIT",
    "CONVERSATION_EDIT_KEY",
    "ConversationChange",
    "conversation_of",
    "describe_edit",
]

CONVERSATION_EDIT = "edit conversation"
"""The name of the `human` step that records an edit."""
CONVERSATION_EDIT_KEY = "conversation_edit"
"""The step_state key holding the `ConversationChange` as JSON."""


class ConversationChange(BaseModel):
    """What an edit did, by message number (1-based, as people count).

    A message keeps the number it had in the conversation before the edit, the one the person
    saw in the editor: numbering changed messages by their place after the edit renumbered
    every message after a dropped one ("message 3 changed" for the message shown as 4).
    """

    changed: list[int] = []
    """Numbers (before the edit) of messages whose text or role changed."""
    dropped: list[int] = []
    """Numbers (before the edit) of messages taken out."""
    added: list[int] = []
    """Numbers of new messages: after the last one before the edit, in the edit's order."""

    @property
    def summary(self) -> str:
        """The edit in words: "message 3 changed; message 5 dropped; 1 message added"."""
        parts = [
            _counted(self.changed, "changed"),
            _counted(self.dropped, "dropped"),
            _counted(self.added, "added"),
        ]
        return "; ".join(p for p in parts if p)


def conversation_of(messages: Sequence[ChatMessage | dict[str, Any]]) -> list[ChatMessage]:
    """`messages` as chat messages that make a conversation, or a `UserError` saying why."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise UserError("the conversation must be a list of messages")
    try:
        edited = [ChatMessage.model_validate(m) for m in messages]
    except ValidationError as exc:
        raise UserError(
            f"a message of the edit is not valid: {exc.errors()[0]['msg']}",
            hint="each message needs a role (system, user, assistant or tool) and its text",
            code="invalid_conversation",
        ) from None
    _check_calls_answered(edited)
    return edited


def _check_calls_answered(messages: list[ChatMessage]) -> None:
    """Models refuse a tool result with no call before it, and a call left unanswered."""
    open_calls: dict[str, int] = {}
    for position, message in enumerate(messages, 1):
        if message.role == "tool":
            if message.tool_call_id is not None and open_calls.pop(message.tool_call_id, 0) == 0:
                _refuse(f"message {position} is a tool result that answers no call before it")
        for call in message.tool_calls:
            open_calls[call.id] = position
    if open_calls:
        position = min(open_calls.values())
        _refuse(
            f"message {position} calls a tool whose result is missing "
            "(drop the call with its result, or neither)"
        )


def _refuse(why: str) -> None:
    raise UserError(
        f"the edited messages do not make a conversation a model accepts: {why}",
        hint="keep each tool call together with its result",
        code="invalid_conversation",
    )


def describe_edit(
    before: Sequence[ChatMessage], after: Sequence[ChatMessage]
) -> ConversationChange | None:
    """What turned `before` into `after`; None when nothing did."""
    old, new = [_key(m) for m in before], [_key(m) for m in after]
    if old == new:
        return None
    change = ConversationChange()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        change.changed += _positions(i1, i1 + paired)
        change.dropped += _positions(i1 + paired, i2)
        fresh = len(old) + len(change.added)  # New numbers follow the last old one.
        change.added += _positions(fresh, fresh + (j2 - j1 - paired))
    return change


def _key(message: ChatMessage) -> str:
    return message.model_dump_json()


def _positions(start: int, end: int) -> list[int]:
    return list(range(start + 1, end + 1))


def _counted(positions: Iterable[int], verb: str) -> str:
    listed = list(positions)
    if not listed:
        return ""
    if verb == "added":
        return f"{len(listed)} message{'' if len(listed) == 1 else 's'} added"
    numbers = ", ".join(str(p) for p in listed)
    return f"message{'' if len(listed) == 1 else 's'} {numbers} {verb}"
