"""The conversation exactly as the model will see it on the next step."""

from __future__ import annotations

import streamlit as st

from agent_core.llms.base import ChatMessage

__all__ = ["render_memory"]


def render_memory(messages: list[ChatMessage], *, limit: int = 40) -> None:
    """List `messages` (the newest `limit`), each as raw text under its role."""
    if not messages:
        st.caption("The model has seen nothing yet.")
        return
    hidden = len(messages) - limit
    if hidden > 0:
        st.caption(f"{hidden} earlier messages not shown.")
    for message in messages[-limit:]:
        label = message.role
        if message.tool_calls:
            calls = ", ".join(f"{c.name}({c.args})" for c in message.tool_calls)
            label += f" → calls {calls}"
        if message.tool_call_id:
            label += f" (result of {message.name or 'tool'} {message.tool_call_id})"
        st.caption(label)
        st.code(message.content or "(no text)", language=None, wrap_lines=True)
