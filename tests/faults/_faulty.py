"""A model that fails on purpose: seeded provider errors and garbage replies around a real one.

`FaultyLLM` wraps any `LLM`. Before each call it rolls its seeded `random.Random`: most calls
go through to the wrapped model, the rest raise an `LLMError` as a provider would (429, 500,
a timeout, a stream cut off midway) or return a garbage reply instead of the real one
(malformed ReAct text, an invalid plan, a tool call with broken arguments). Every fault
carries a unique marker in its text, so a test can find it again in the error recorded on a
failed step.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

from agent_core.errors import LLMError
from agent_core.llms.base import (
    LLM,
    RAW_TOOL_ARGUMENTS,
    ChatMessage,
    ChatResponse,
    ChatStreamEvent,
    ToolCall,
    ToolSpec,
)

__all__ = [
    "FC_GARBAGE",
    "PLAN_GARBAGE",
    "PROVIDER_FAULTS",
    "REACT_GARBAGE",
    "Fault",
    "FaultyLLM",
    "Garbage",
]

Garbage = Callable[[str], str | ChatResponse]
"""Builds a garbage reply around a fault's marker."""

PROVIDER_FAULTS = ("429", "500", "timeout", "stream_cut")
"""Faults that raise an `LLMError`: each must fail the step it happens in."""


@dataclass(frozen=True)
class Fault:
    """One injected fault: what kind, and the marker its text carries."""

    kind: str
    marker: str

    @property
    def raises(self) -> bool:
        """Whether the fault is a provider error (the call raises) rather than a bad reply."""
        return self.kind in PROVIDER_FAULTS


def _reply(text: str, *calls: ToolCall) -> ChatResponse:
    message = ChatMessage(role="assistant", content=text, tool_calls=calls)
    return ChatResponse(message=message, model="faulty")


REACT_GARBAGE: tuple[Garbage, ...] = (
    lambda m: f"Thought: {m}\nAction: multiply\n",  # no Action Input
    lambda m: f'Thought: {m}\nAction: multiply\nAction Input: {{"a": 2,',  # unclosed
    lambda m: f"Thought: {m}\nAction:\nAction Input: {{}}",  # no tool named
    lambda m: f'Thought: {m}\nAction: teleport\nAction Input: {{"to": "mars"}}',  # no such tool
    lambda m: f'Thought: {m}\nAction: add\nAction Input: {{"a": "one", "b": null}}',  # bad args
    lambda m: f"Action Input: {{'a': (1, 2)}}\nAction: add\n{m}",  # input before action
)
"""Malformed ReAct replies: each should become an observation the model reads."""

PLAN_GARBAGE: tuple[Garbage, ...] = (
    lambda m: f'{{"plan": [{{"id": "a", "agent": "wizard", "prompt": "{m}"}}]}}',
    lambda m: (
        f'{{"plan": [{{"id": "a", "agent": "file", "prompt": "{m}", "depends_on": ["b"]}}, '
        '{"id": "b", "agent": "code", "prompt": "p", "depends_on": ["a"]}]}'
    ),
    lambda m: f'Here is my plan ({m}): {{"plan": [{{"id": "a", "agent": ',
    lambda m: f'```json\n{{"plan": []}}\n```\n{m}',
    lambda m: f"I would rather not plan today. {m}",
)
"""Invalid plans: each should fail a plan step with a `PlanError` quoting the text."""

FC_GARBAGE: tuple[Garbage, ...] = (
    lambda m: _reply(m, ToolCall(id="g1", name="teleport", args={"to": "mars"})),
    lambda m: _reply(m, ToolCall(id="g2", name="add", args={RAW_TOOL_ARGUMENTS: '{"a": 1,'})),
    lambda m: _reply(m, ToolCall(id="g3", name="multiply", args={"a": [1], "c": None})),
)
"""Broken native tool calls: each tool step should end with an error the model reads."""


class FaultyLLM:
    """An `LLM` that wraps `inner` and, driven by `rng`, fails a share of its calls.

    Args:
        inner: The model that answers when no fault is drawn.
        rng: The seeded source of every decision, so a run can be replayed from its seed.
        rate: The share of calls that get a fault.
        garbage: The garbage replies to draw from; empty means provider errors only.
        first_fault_by: When set, a run that drew no fault in its first `first_fault_by`
            calls gets one at that call: a short run would otherwise go by without any, and
            prove nothing about faults.
    """

    def __init__(
        self,
        inner: LLM,
        rng: random.Random,
        *,
        rate: float = 0.25,
        garbage: Sequence[Garbage] = (),
        first_fault_by: int | None = None,
    ) -> None:
        self.inner = inner
        self.model = inner.model
        self.rng = rng
        self.rate = rate
        self.garbage = tuple(garbage)
        self.first_fault_by = first_fault_by
        self.enabled = True
        self.calls = 0
        """Calls that came through this wrapper: none means the code under test never used it."""
        self.injected: list[Fault] = []

    def _roll(self) -> Fault | None:
        self.calls += 1
        if not self.enabled:
            return None
        drawn = self.rng.random() < self.rate
        if not (drawn or (not self.injected and self.calls == self.first_fault_by)):
            return None
        kinds = [*PROVIDER_FAULTS, *(["garbage"] * 2 if self.garbage else [])]
        fault = Fault(self.rng.choice(kinds), f"[fault {len(self.injected) + 1}]")
        self.injected.append(fault)
        return fault

    def _error(self, fault: Fault) -> LLMError:
        if fault.kind == "timeout":
            return LLMError(f"{self.model} did not answer in time {fault.marker}", timed_out=True)
        if fault.kind == "stream_cut":
            return LLMError(f"the connection to {self.model} dropped {fault.marker}", status=502)
        status = int(fault.kind)
        return LLMError(f"{self.model} answered {status} {fault.marker}", status=status)

    def _garbage(self, fault: Fault) -> ChatResponse:
        reply = self.rng.choice(self.garbage)(fault.marker)
        return reply if isinstance(reply, ChatResponse) else _reply(reply)

    async def chat(
        self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] | None = None
    ) -> ChatResponse:
        """The wrapped model's reply, a garbage reply, or an `LLMError`."""
        fault = self._roll()
        if fault is None:
            return await self.inner.chat(messages, tools=tools)
        if fault.kind == "garbage":
            return self._garbage(fault)
        raise self._error(fault)

    async def stream_chat(
        self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] | None = None
    ) -> AsyncIterator[ChatStreamEvent]:
        """Stream like `chat`; a fault may cut the stream after its first deltas."""
        fault = self._roll()
        if fault is not None and fault.raises:
            if fault.kind == "stream_cut":  # Some text arrives before the connection drops.
                yield ChatStreamEvent(delta="Thought: I will")
            raise self._error(fault)
        if fault is not None:
            response = self._garbage(fault)
            yield ChatStreamEvent(delta=response.text)
            yield ChatStreamEvent(response=response)
            return
        async for event in self.inner.stream_chat(messages, tools=tools):
            yield event
