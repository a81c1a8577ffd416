"""LangChain's messages as Stepwise's, and back: what the memory view, previews and cards show.

A LangGraph agent's conversation is a state key of LangChain messages (`MessagesState`'s
"messages"). Stepwise mirrors it into `task.memory` as `ChatMessage`s, shows it as "What the
model sees next", and hands a person's feedback to the graph as a `HumanMessage`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)

from agent_core.llms.base import ChatMessage, ToolCall
from agent_core.types import ToolOutput

__all__ = [
    "REJECTED_PREFIX",
    "as_list",
    "as_messages",
    "describe",
    "from_langchain",
    "json_object",
    "json_safe",
    "new_tool_outputs",
    "rejection_message",
    "text_of",
    "to_langchain",
]

REJECTED_PREFIX = "The user rejected the call of"
"""How a rejection the model reads begins (as the built-in workers word it)."""

_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _text(message: BaseMessage) -> str:
    return message.text if isinstance(message.content, list) else str(message.content)


def from_langchain(message: BaseMessage) -> ChatMessage:
    """`message` as a Stepwise `ChatMessage` (role, text, tool calls, the call it answers)."""
    role = _ROLES.get(message.type) or getattr(message, "role", None) or "user"
    if role not in ("user", "assistant", "tool", "system"):
        role = "user"
    calls: tuple[ToolCall, ...] = ()
    if isinstance(message, AIMessage):
        calls = tuple(
            ToolCall(id=call.get("id") or "", name=call["name"], args=dict(call["args"]))
            for call in message.tool_calls
        )
    return ChatMessage(
        role=role,
        content=_text(message),
        tool_calls=calls,
        tool_call_id=message.tool_call_id if isinstance(message, ToolMessage) else None,
        name=message.name,
    )


def to_langchain(message: ChatMessage, *, id: str | None = None) -> AnyMessage:
    """A Stepwise `ChatMessage` as the LangChain message a graph's state holds."""
    if message.role == "assistant":
        calls = [
            {"name": c.name, "args": c.args, "id": c.id, "type": "tool_call"}
            for c in message.tool_calls
        ]
        return AIMessage(content=message.content, tool_calls=calls, id=id)
    if message.role == "tool":
        return ToolMessage(
            content=message.content,
            tool_call_id=message.tool_call_id or "",
            name=message.name,
            id=id,
        )
    if message.role == "system":
        return SystemMessage(content=message.content, id=id)
    return HumanMessage(content=message.content, id=id)


def rejection_message(call: Mapping[str, Any], reason: str) -> ToolMessage:
    """The answer to a call a person rejected: the model reads their reason."""
    return ToolMessage(
        content=f"{REJECTED_PREFIX} {call['name']}: {reason}",
        tool_call_id=call.get("id") or "",
        name=call["name"],
        status="error",
    )


def _call_text(call: Mapping[str, Any]) -> str:
    return f"{call['name']}({json.dumps(call['args'], ensure_ascii=False)})"


def describe(message: BaseMessage) -> str:
    """One message in a line or a few: a reply's text and the calls it makes, a tool result."""
    text = _text(message)
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = "\n".join(_call_text(call) for call in message.tool_calls)
        return f"{text}\n{calls}" if text else calls
    if isinstance(message, ToolMessage):
        return f"{message.name or 'tool'} -> {text}"
    return text


def new_tool_outputs(
    new: Sequence[BaseMessage], history: Iterable[BaseMessage]
) -> list[ToolOutput]:
    """The tool calls the `new` messages answer, as Stepwise records a tool call."""
    calls: dict[str, Mapping[str, Any]] = {}
    for message in [*history, *new]:
        if isinstance(message, AIMessage):
            calls.update({call.get("id") or "": call for call in message.tool_calls})
    outputs = []
    for message in new:
        if not isinstance(message, ToolMessage):
            continue
        call = calls.get(message.tool_call_id, {})
        text = _text(message)
        outputs.append(
            ToolOutput(
                tool_name=message.name or call.get("name", "tool"),
                args=dict(call.get("args") or {}),
                content=text,
                is_error=message.status == "error",
                call_id=message.tool_call_id,
                rejected=text.startswith(REJECTED_PREFIX),
            )
        )
    return outputs


def as_list(value: Any) -> list[Any]:
    """A state update's messages as a list (a node may return one message, or none)."""
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def as_messages(value: Any) -> list[BaseMessage]:
    """A state update's "messages" as LangChain messages ([] when they are something else).

    A node may return one message, a list, tuples or dicts (LangGraph's reducer takes them
    all); a "messages" key of a state of one's own may hold anything.
    """
    try:
        return list(convert_to_messages(as_list(value)))
    except (ValueError, TypeError, NotImplementedError):
        return []


def json_object(text: str) -> dict[str, Any] | None:
    """`text` as a JSON object, or None when it is not one."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else str(value)


def json_safe(value: Any) -> Any:
    """`value` as JSON can hold it (a pydantic model as its dump, anything else as text)."""
    return json.loads(json.dumps(value, default=_plain))


def text_of(value: Any) -> str:
    """`value` as text: itself if it is a string, else its JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, default=_plain, ensure_ascii=False)
