"""`StreamingAgentChatResponse`: a task's answer as text chunks, as LlamaIndex streams it.

`AgentRunner.stream_chat` returns one. The task runs while the chunks are read (its steps on
the runtime, as any); once they are exhausted the task is finalized, so `response` holds the
whole answer, `sources` the tool calls it drew on, and the runner's `chat_history` the turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

from agent_core.runtime.loop import iterate_sync
from agent_core.types import AgentChatResponse, ToolOutput

__all__ = ["StreamingAgentChatResponse"]


class StreamingAgentChatResponse:
    """The answer of a task still running, read as it comes.

    Args:
        chunks: The answer's text, chunk by chunk (the task runs as they are read).
        finish: Finalizes the task once the chunks are exhausted; returns its response.
    """

    def __init__(self, chunks: AsyncIterator[str], finish: Callable[[], AgentChatResponse]) -> None:
        self.response = ""
        self.sources: list[ToolOutput] = []
        self.task_id = ""
        self.is_done = False
        self._chunks = chunks
        self._finish = finish

    async def async_response_gen(self) -> AsyncIterator[str]:
        """Yield the answer's chunks; read again once done, it yields the whole answer."""
        if self.is_done:
            if self.response:
                yield self.response
            return
        async for chunk in self._chunks:
            self.response += chunk
            yield chunk
        final = self._finish()
        self.response, self.sources, self.task_id = final.response, final.sources, final.task_id
        self.is_done = True

    @property
    def response_gen(self) -> Iterator[str]:
        """Sync twin of `async_response_gen` (outside a running event loop only)."""
        return iterate_sync(self.async_response_gen(), name="response_gen")

    def get_response(self) -> AgentChatResponse:
        """Read the stream to its end and return the finished response."""
        for _ in self.response_gen:
            pass
        return AgentChatResponse(response=self.response, sources=self.sources, task_id=self.task_id)

    def print_response_stream(self) -> None:
        """Print the answer as it comes."""
        for chunk in self.response_gen:
            print(chunk, end="", flush=True)
        print()

    def __str__(self) -> str:
        return self.response
