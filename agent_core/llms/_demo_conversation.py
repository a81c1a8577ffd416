"""How the demo model reads the conversation it is sent: the question, tool results, feedback.

The demo model steers by what a model would read: the text of the messages. A tool's result
comes back as an `Observation: ...` message (the ReAct protocol) or a `tool` message (native
calls); a person's edit of a call or their rejection of it comes back as the notes
`agent_core.workers.tool_steps` writes ("(The user changed this call to ...)", "The user
rejected the call of ..."), and their feedback as a plain user message. Nothing else is read,
so the reply stays a function of the conversation: undo and re-run replay it exactly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_core.llms.base import ChatMessage

__all__ = ["Conversation", "ToolResult", "read_conversation"]

OBSERVATION = "Observation: "
_EDITED = re.compile(r"\(The user changed this call to (?P<tool>\S+) with ")
_REJECTED = re.compile(r"The user rejected the call of (?P<tool>\S+): (?P<reason>.*)\Z", re.DOTALL)
_ACTION = re.compile(r"^[ \t]*Action[ \t]*:[ \t]*(?P<tool>\S+)[ \t]*$", re.MULTILINE)
_ACTION_INPUT = re.compile(r"^[ \t]*Action[ \t]+Input[ \t]*:[ \t]*", re.MULTILINE)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One call as it ran (after a person's edit) and what came back."""

    tool: str
    args: dict[str, Any]
    text: str
    """The result without the edit note."""
    rejected: str | None = None
    """A person's reason for refusing the call (it did not run)."""
    edited: bool = False
    fresh: bool = False
    """It came back after the model's last reply (the reply being made reads it first)."""

    @property
    def failed(self) -> bool:
        return self.rejected is None and self.text.startswith("Error")

    @property
    def stopped(self) -> bool:
        """Rejected or failed: the plan cannot build on it."""
        return self.rejected is not None or self.failed

    @property
    def number(self) -> int | float | None:
        """The result as a number, if it is one (whole numbers stay whole)."""
        for kind in (int, float):
            try:
                return kind(self.text.strip())
            except ValueError:
                continue
        return None


@dataclass(frozen=True, slots=True)
class Conversation:
    """What the demo model reads: the question it works on, and what happened since."""

    question: str
    """The newest message of a person's that a script answers (an edited question wins)."""
    results: tuple[ToolResult, ...]
    """Results since the question, in the order the model made the calls."""
    feedback: tuple[str, ...]
    """A person's other messages since the model's last reply."""
    replies: int
    """The model's replies since the question."""
    calls_made: int
    """Native tool calls in the whole conversation (so new call ids stay unique)."""
    last_message: str


def _is_person(message: ChatMessage) -> bool:
    return message.role == "user" and not message.content.startswith(OBSERVATION)


def _react_call(text: str) -> list[tuple[str, str, dict[str, Any]]]:
    """The call in a ReAct reply, read leniently (a person may have edited the reply)."""
    action = _ACTION.search(text)
    if action is None:
        return []
    after = text[action.end() :]
    found = _ACTION_INPUT.search(after)
    args: Any = {}
    if found is not None:
        raw = after[found.end() :].lstrip()
        try:
            args, _ = _DECODER.raw_decode(raw)
        except ValueError:
            args = {}
    return [("", action.group("tool"), args if isinstance(args, dict) else {})]


def _calls_of(message: ChatMessage) -> list[tuple[str, str, dict[str, Any]]]:
    if message.tool_calls:
        return [(call.id, call.name, call.args) for call in message.tool_calls]
    return _react_call(message.content)


def _result(tool: str, args: dict[str, Any], content: str, *, fresh: bool) -> ToolResult:
    """The call as it ran, read from its result's notes, else as the model proposed it."""
    rejected = _REJECTED.match(content)
    if rejected is not None:
        return ToolResult(tool, args, content, rejected=rejected.group("reason"), fresh=fresh)
    edited = _EDITED.match(content)
    if edited is not None:
        try:
            new_args, end = _DECODER.raw_decode(content, edited.end())
        except ValueError:
            new_args, end = None, 0
        if isinstance(new_args, dict) and content.startswith(".) ", end):
            rest = content[end + 3 :]
            return ToolResult(edited.group("tool"), new_args, rest, edited=True, fresh=fresh)
    return ToolResult(tool, args, content, fresh=fresh)


def _results(messages: Sequence[ChatMessage], last_reply: int) -> list[ToolResult]:
    """Each call's result, turn by turn, in the order the calls were made."""
    turns: list[tuple[list[tuple[str, str, dict[str, Any]]], dict[str, tuple[str, bool]]]] = []
    for index, message in enumerate(messages):
        fresh = index > last_reply
        if message.role == "assistant":
            turns.append((_calls_of(message), {}))
        elif not turns:
            continue  # A result before any call answers nothing of this question's.
        elif message.role == "tool":
            turns[-1][1].setdefault(message.tool_call_id or "", (message.content, fresh))
        elif message.role == "user" and message.content.startswith(OBSERVATION):
            turns[-1][1].setdefault("", (message.content.removeprefix(OBSERVATION), fresh))
    results = []
    for calls, answers in turns:
        for call_id, tool, args in calls:
            if call_id in answers:
                content, fresh = answers[call_id]
                results.append(_result(tool, args, content, fresh=fresh))
    return results


def read_conversation(
    messages: Sequence[ChatMessage], is_question: Callable[[str], bool]
) -> Conversation | None:
    """The conversation from its newest question on; None when no message is a question."""
    people = [i for i, m in enumerate(messages) if _is_person(m)]
    start = next((i for i in reversed(people) if is_question(messages[i].content)), None)
    if start is None:
        return None
    replies = [i for i, m in enumerate(messages) if m.role == "assistant"]
    last_reply = replies[-1] if replies else -1
    since = messages[start + 1 :]
    return Conversation(
        question=messages[start].content,
        results=tuple(_results(since, last_reply - start - 1)),
        feedback=tuple(messages[i].content for i in people if i > last_reply and i != start),
        replies=sum(1 for i in replies if i > start),
        calls_made=sum(len(m.tool_calls) for m in messages if m.role == "assistant"),
        last_message=messages[-1].content if messages else "",
    )
