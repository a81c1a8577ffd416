"""One model call from a step: plain, or streamed as token deltas when someone listens."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from agent_core.effects import current_step
from agent_core.errors import LLMError
from agent_core.events import EventSink, TokenDeltaEvent
from agent_core.llms.base import LLM, ChatMessage, ChatResponse, ToolChoice, ToolSpec
from agent_core.runtime.model_calls import intercept_call
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
    tool_choice: ToolChoice | None = None,
) -> ChatResponse:
    """The model's reply, streamed to `emit` as token deltas when there is one.

    The messages are recorded on the running step, which keeps them as `messages_sent`.
    `tool_choice` goes to models whose `chat` takes it (the adapters, the scripted models);
    a model of one's own written before it existed is called as before.
    """
    context = current_step()
    if context is not None:
        context.messages_sent = list(messages)
    extra: dict[str, Any] = {}
    if tool_choice is not None and _takes_tool_choice(llm):
        extra["tool_choice"] = tool_choice
    # A sample captures this call, or a sampled reply answers it (`runtime.model_calls`).
    chosen = intercept_call(llm, messages, tools, extra)
    if chosen is not None:
        return chosen
    options: dict[str, Any] = {"tools": tools, **extra}
    if emit is None:
        return await llm.chat(messages, **options)
    response = None
    async for event in llm.stream_chat(messages, **options):
        if event.delta:
            emit(TokenDeltaEvent(step_id=step.step_id, delta=event.delta))
        if event.response is not None:
            response = event.response
    if response is None:
        raise LLMError(f"the stream from {llm.model} ended without a complete reply")
    return response


def _takes_tool_choice(llm: LLM) -> bool:
    try:
        parameters = inspect.signature(llm.chat).parameters.values()
    except (TypeError, ValueError):  # A callable without a signature: do not guess.
        return False
    return any(p.name == "tool_choice" or p.kind is p.VAR_KEYWORD for p in parameters)
