"""What an imported trace recorded, in one shape for every format, before it becomes a task.

Each importer reads its format into `RecordedRun`s: the question, then the model calls, tool
calls and notes in the order they happened. `to_task` turns one into a stored task.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from agent_core.llms.base import ChatMessage, Usage
from agent_core.types import ImportSource

__all__ = [
    "TRACE_GAP",
    "TRACE_SPAN",
    "RecordedEvent",
    "RecordedModelCall",
    "RecordedNote",
    "RecordedRun",
    "RecordedToolCall",
]

TRACE_SPAN = "trace_span"
"""The `StepNote` code of a span that was neither a model nor a tool call."""
TRACE_GAP = "trace_gap"
"""The `StepNote` code of what the trace held that could not be read."""


class RecordedModelCall(BaseModel):
    """One model call: the messages it was sent and its reply."""

    kind: Literal["model"] = "model"
    span: str = ""
    """The span (observation, run) id in the source, for people."""
    name: str | None = None
    """The framework's name for the call (a span name, a LangGraph node)."""
    messages: list[ChatMessage] = Field(default_factory=list)
    """What the model was sent; empty when the trace did not record it."""
    reply: ChatMessage = Field(default_factory=lambda: ChatMessage(role="assistant"))
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    started_at: datetime | None = None
    latency_ms: float = 0.0
    error: str | None = None


class RecordedToolCall(BaseModel):
    """One tool call: its arguments and its result or error."""

    kind: Literal["tool"] = "tool"
    span: str = ""
    name: str | None = None
    tool: str
    call_id: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    result: str = ""
    is_error: bool = False
    started_at: datetime | None = None
    latency_ms: float = 0.0


class RecordedNote(BaseModel):
    """Something the trace held that is neither a model nor a tool call, or could not be read."""

    kind: Literal["note"] = "note"
    span: str = ""
    code: Literal["trace_span", "trace_gap"] = "trace_span"
    message: str


RecordedEvent = Annotated[
    RecordedModelCall | RecordedToolCall | RecordedNote, Field(discriminator="kind")
]


class RecordedRun(BaseModel):
    """One trace: the question and what happened, in order."""

    question: str = ""
    """The run's input; empty: the first user message of the first model call."""
    answer: str | None = None
    """The run's final output, when recorded apart from the last reply."""
    events: list[RecordedEvent] = Field(default_factory=list)
    source: ImportSource
