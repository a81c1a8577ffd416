"""ReAct chat formatter tests.

Ported from LlamaIndex (llama-index-core 0.12, `tests/agent/react/test_react_chat_formatter.py`)
by changing imports and the least spelling possible; every change is marked `# stepwise:`.
Typing aliases (`List[...]`, `Optional[...]`) are spelt as builtins, as the linter asks.
"""

from collections.abc import Sequence

# stepwise: imports from agent_core
from agent_core.llms import ChatMessage, MessageRole
from agent_core.tools import BaseTool
from agent_core.workers import ReActChatFormatter


class MockReActChatFormatter(ReActChatFormatter):
    def format(
        self,
        tools: Sequence[BaseTool],
        chat_history: list[ChatMessage],
        current_reasoning: list[object] | None = None,  # stepwise: reasoning is in memory
    ) -> list[ChatMessage]:
        return [ChatMessage(role=MessageRole.SYSTEM, content="mock data!")]


def test_inheritance_react_chat_formatter():
    formatter_from_defaults = MockReActChatFormatter.from_defaults()
    format_default_message = formatter_from_defaults.format([], [])
    assert format_default_message[0].content == "mock data!"

    formatter_from_context = MockReActChatFormatter.from_context("mock context!")
    format_context_message = formatter_from_context.format([], [])
    assert format_context_message[0].content == "mock data!"
