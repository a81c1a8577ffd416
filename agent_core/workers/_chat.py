"""One model call from a step: plain, or streamed as token deltas when someone listens."""

from __future__ import annotations

from collections.abc import Sequence

from agent_core.effects import current_step
from agent_core.errors import LLMError
from agent_core.events import EventSink, TokenDeltaEvent
from agent_core.llms.base import LLM, ChatMessage, ChatResponse, ToolSpec
from agent_core.telemetry.hooks import traced_chat
from agent_core.types import TaskStep

__all__ = ["step_chat"]


@traced_chat
async def step_chat(
    llm: LLM,
    messages: list[ChatMessage],
    step: TaskStep,
    emit: EventSink | None,
    *,
    tools: Sequence[ToolSpec] | None = None,
) -> ChatResponse:
    """The model's reply, streamed to `emit` as token deltas when there is one.

    The messages are recorded on the running step, which keeps them as `messages_sent`.
    """
    context = current_step()
    if context is not None:
        context.messages_sent = list(messages)
    if emit is None:
        return await llm.chat(messages, tools=tools)
    response = None
    async for event in llm.stream_chat(messages, tools=tools):
        if event.delta:
            emit(TokenDeltaEvent(step_id=step.step_id, delta=event.delta))
        if event.response is not None:
            response = event.response
    if response is None:
        raise LLMError(f"the stream from {llm.model} ended without a complete reply")
    return response
