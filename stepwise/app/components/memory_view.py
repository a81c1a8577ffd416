"""A conversation as the model sees it: the system prompt in full, then the messages, paged.

Every piece of a message that came from a model, a tool or a person (its text, tool names,
arguments) is shown with `st.code`, never through markdown.
"""

from __future__ import annotations

import hashlib
import json

import streamlit as st
from streamlit.errors import StreamlitDuplicateElementKey

from agent_core.dag import display_value
from agent_core.llms.base import ChatMessage

__all__ = ["PAGE_SIZE", "message_text", "page_bounds", "render_memory"]

PAGE_SIZE = 20
"""Messages per page; the system prompt is shown above every page."""

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
        args = json.dumps(display_value(call.args), ensure_ascii=False)
        lines.append(f"→ calls {call.name}({args}) [id {call.id}]")
    if message.tool_call_id:
        lines.append(f"(result of {message.name or 'tool'}, call id {message.tool_call_id})")
    return "\n".join(lines)


def page_bounds(count: int, page: int, *, page_size: int = PAGE_SIZE) -> tuple[int, int]:
    """The [start, end) indexes of page `page` (0-based, clamped) of `count` messages."""
    pages = max(1, -(-count // page_size))
    page = min(max(page, 0), pages - 1)
    return page * page_size, min(count, (page + 1) * page_size)


def render_memory(
    messages: list[ChatMessage],
    *,
    limit: int | None = None,
    key: str | None = None,
    page_size: int = PAGE_SIZE,
) -> None:
    """Show `messages`: system prompts in full first, the rest `page_size` to a page.

    A longer history gets a page picker (keyed `key`, or by the messages when None), opened on
    the newest page. `limit` is accepted for older callers and ignored: nothing is cut.
    """
    del limit  # Paging replaced the cut; see the docstring.
    if not messages:
        st.caption("The model has seen nothing yet.")
        return
    system = [m for m in messages if m.role == "system"]
    rest = [m for m in messages if m.role != "system"]
    for message in system:
        _show(message)
    if len(rest) > page_size:
        start, end = _pick_page(rest, key=key, page_size=page_size)
        st.caption(f"Messages {start + 1} to {end} of {len(rest)}, oldest first.")
        rest = rest[start:end]
    for message in rest:
        _show(message)


def _show(message: ChatMessage) -> None:
    st.caption(_ROLE_NAMES.get(message.role, "message"))
    st.code(message_text(message), language=None, wrap_lines=True)


def _pick_page(messages: list[ChatMessage], *, key: str | None, page_size: int) -> tuple[int, int]:
    pages = -(-len(messages) // page_size)

    def label(page: int) -> str:
        start, end = page_bounds(len(messages), page, page_size=page_size)
        return f"Page {page + 1} of {pages} (messages {start + 1} to {end})"

    base = key or _default_key(messages)
    for attempt in range(1, 20):
        # The same conversation may be shown twice on a page (the preview and the editor).
        widget_key = base if attempt == 1 else f"{base}-{attempt}"
        try:
            page = st.selectbox(
                "Page",
                range(pages),
                index=pages - 1,
                format_func=label,
                key=f"memory-page-{widget_key}",
                label_visibility="collapsed",
            )
        except StreamlitDuplicateElementKey:
            continue
        return page_bounds(len(messages), page or 0, page_size=page_size)
    return page_bounds(len(messages), pages - 1, page_size=page_size)


def _default_key(messages: list[ChatMessage]) -> str:
    # Tied to the conversation and its length: a longer one opens on its newest page again.
    digest = hashlib.sha1(usedforsecurity=False)
    for message in messages[:3]:
        digest.update(f"{message.role}\0{message.content[:500]}\0".encode())
    return f"{digest.hexdigest()[:12]}-{len(messages)}"
