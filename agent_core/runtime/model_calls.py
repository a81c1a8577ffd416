"""A step's model call, captured instead of sent, or answered with a reply chosen beforehand.

The built-in workers make every model call of a step through one function
(`agent_core.workers._chat.step_chat`), which asks this module first. Sampling a step
(`agent_core.runtime.sampling`) runs the worker's own code for the step on a copy of the task
and stops it at that call, so the request it samples is exactly the one the step would send;
continuing with a sampled reply runs the step for real with that reply in place of the first
call, so the step commits what the person chose without asking the model again.

Both are context variables: they hold for the coroutine that set them and what it awaits,
never for another step running beside it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from agent_core.llms.base import LLM, ChatMessage, ChatResponse, ToolSpec

__all__ = [
    "CapturedCall",
    "ModelCallCaptured",
    "answering_with",
    "capturing_calls",
    "intercept_call",
]


@dataclass(frozen=True)
class CapturedCall:
    """One model call as the step would make it: the model, the messages and the options."""

    llm: LLM
    messages: list[ChatMessage]
    tools: Sequence[ToolSpec] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    """Further keywords of the call (`tool_choice`), as the worker would pass them."""


class ModelCallCaptured(BaseException):
    """Stops a captured step at its model call; a BaseException so no worker catches it."""

    def __init__(self, call: CapturedCall) -> None:
        super().__init__("model call captured")
        self.call = call


@dataclass
class _Answer:
    reply: ChatResponse
    used: bool = False


_capturing: ContextVar[bool] = ContextVar("stepwise_capture_calls", default=False)
_answer: ContextVar[_Answer | None] = ContextVar("stepwise_answer_call", default=None)


@contextlib.contextmanager
def capturing_calls() -> Iterator[None]:
    """The first model call in the body raises `ModelCallCaptured` instead of being sent."""
    token = _capturing.set(True)
    try:
        yield
    finally:
        _capturing.reset(token)


@contextlib.contextmanager
def answering_with(reply: ChatResponse) -> Iterator[None]:
    """The first model call in the body gets `reply`; any later one goes to the model."""
    token = _answer.set(_Answer(reply))
    try:
        yield
    finally:
        _answer.reset(token)


def intercept_call(
    llm: LLM, messages: list[ChatMessage], tools: Sequence[ToolSpec] | None, options: dict[str, Any]
) -> ChatResponse | None:
    """The reply chosen for this call, or None to send it; raises when it is being captured.

    Raises:
        ModelCallCaptured: A `capturing_calls` body made the call.
    """
    if _capturing.get():
        raise ModelCallCaptured(CapturedCall(llm, list(messages), tools, dict(options)))
    answer = _answer.get()
    if answer is None or answer.used:
        return None
    answer.used = True
    return answer.reply
