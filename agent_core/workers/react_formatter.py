"""`ReActChatFormatter`: what a ReAct step sends the model, as LlamaIndex's class builds it.

The default formatter sends Stepwise's ReAct system prompt and the task's memory. A custom
`system_header` may hold LlamaIndex's `{tool_desc}` and `{tool_names}` placeholders, filled in
here; a subclass may override `format` to build the messages itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_core.llms.base import ChatMessage, MessageRole
from agent_core.tools.base import BaseTool
from agent_core.workers.react_format import _describe, system_prompt

__all__ = ["ReActChatFormatter"]


class ReActChatFormatter:
    """Builds a ReAct step's messages: a system message, then the conversation.

    Args:
        system_header: Replaces Stepwise's system prompt; `{tool_desc}` and `{tool_names}` in
            it are filled with the tools' descriptions and names.
        context: Extra instructions, added after the system prompt.
        observation_role: Accepted for LlamaIndex code; observations are sent as user
            messages, since a `tool` message needs a call id that no ReAct step has.
    """

    def __init__(
        self,
        system_header: str | None = None,
        context: str = "",
        observation_role: MessageRole = MessageRole.USER,
    ) -> None:
        self.system_header = system_header
        self.context = context
        self.observation_role = observation_role

    @classmethod
    def from_defaults(
        cls,
        system_header: str | None = None,
        context: str | None = None,
        observation_role: MessageRole = MessageRole.USER,
    ) -> ReActChatFormatter:
        """Build a formatter, as in LlamaIndex."""
        return cls(system_header, context or "", observation_role)

    @classmethod
    def from_context(cls, context: str) -> ReActChatFormatter:
        """A default formatter with extra instructions."""
        return cls.from_defaults(context=context)

    def system_message(self, tools: Sequence[BaseTool]) -> ChatMessage:
        """The system message that teaches the model the tools and the reply format."""
        specs = [tool.metadata.to_spec() for tool in tools]
        if self.system_header is None:
            text = system_prompt(specs)
        else:
            text = self.system_header.replace(
                "{tool_desc}", "\n".join(_describe(spec) for spec in specs)
            ).replace("{tool_names}", ", ".join(spec.name for spec in specs))
        if self.context:
            text = f"{text}\n\n## Context\n{self.context}"
        return ChatMessage(role="system", content=text)

    def format(
        self,
        tools: Sequence[BaseTool],
        chat_history: list[ChatMessage],
        current_reasoning: list[Any] | None = None,
    ) -> list[ChatMessage]:
        """The messages to send: the system message, then `chat_history`.

        `current_reasoning` is LlamaIndex's scratchpad; Stepwise keeps the reasoning in the
        task's memory, so it arrives empty and is accepted for subclasses' signatures.
        """
        return [self.system_message(tools), *chat_history]
