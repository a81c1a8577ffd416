"""The conversation exactly as the model will see it on the next step.

Every piece of a message that came from a model, a tool or a person (its text, tool names,
arguments) is shown with `st.code`, never through markdown.
"""

from __future__ import annotations

import json

import streamlit as st

from agent_core.llms.base import ChatMessage

__all__ = ["message_text", "render_memory"]

_ROLE_NAMES = {
    "system": "system prompt",
    "user": "user",
    "assistant": "assistant (the model)",
    "tool": "tool result",
}


def message_text(message: ChatMessage) -> str:
    """A message as plain text: its content, then the tool calls it asks for or answers."""
    lines = [message.content] if message.content else []
    if not lines and not message.tool_calls:
        lines.append("(no text)")
    for call in message.tool_calls:
        args = json.dumps(call.args, ensure_ascii=False)
        lines.append(f"→ calls {call.name}({args}) [id {call.id}]")
    if message.tool_call_id:
        lines.append(f"(result of {message.name or 'tool'}, call id {message.tool_call_id})")
    return "\n".join(lines)


def render_memory(messages: list[ChatMessage], *, limit: int | None = 40) -> None:
    """List `messages` (the newest `limit`, or all with None), each as raw text under its role."""
    if not messages:
        st.caption("The model has seen nothing yet.")
        return
    shown = messages if limit is None else messages[-limit:]
    hidden = len(messages) - len(shown)
    if hidden > 0:
        st.caption(f"{hidden} earlier messages not shown.")
    for message in shown:
        st.caption(_ROLE_NAMES.get(message.role, "message"))
        st.code(message_text(message), language=None, wrap_lines=True)
