"""Events a streamed step yields, in order: started, deltas and tool calls, completed or failed.

`kind` strings are public API: the UI and any consumer switch on them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from agent_core.types import TaskStepOutput, ToolOutput

__all__ = [
    "EventSink",
    "StepCompletedEvent",
    "StepEvent",
    "StepFailedEvent",
    "StepStartedEvent",
    "TokenDeltaEvent",
    "ToolCallFinishedEvent",
    "ToolCallStartedEvent",
    "step_event_adapter",
]


class StepStartedEvent(BaseModel):
    """The runner claimed the step and handed it to the worker."""

    kind: Literal["step_started"] = "step_started"
    task_id: str
    step_id: str


class TokenDeltaEvent(BaseModel):
    """A piece of the model's reply, as it streams."""

    kind: Literal["token_delta"] = "token_delta"
    step_id: str
    delta: str


class ToolCallStartedEvent(BaseModel):
    """A tool is about to run with these arguments."""

    kind: Literal["tool_call_started"] = "tool_call_started"
    step_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolCallFinishedEvent(BaseModel):
    """A tool returned (or failed; see `output.is_error`)."""

    kind: Literal["tool_call_finished"] = "tool_call_finished"
    step_id: str
    output: ToolOutput


class StepCompletedEvent(BaseModel):
    """The step committed; `output` is what `run_step` would have returned."""

    kind: Literal["step_completed"] = "step_completed"
    step_id: str
    output: TaskStepOutput


class StepFailedEvent(BaseModel):
    """The step failed and was recorded as `failed`; the stream raises `StepError` next."""

    kind: Literal["step_failed"] = "step_failed"
    step_id: str
    error: str


StepEvent = Annotated[
    StepStartedEvent
    | TokenDeltaEvent
    | ToolCallStartedEvent
    | ToolCallFinishedEvent
    | StepCompletedEvent
    | StepFailedEvent,
    Field(discriminator="kind"),
]

EventSink = Callable[[StepEvent], None]
"""Where a worker sends events while a step runs (given to `arun_step` as `emit`)."""

step_event_adapter: TypeAdapter[StepEvent] = TypeAdapter(StepEvent)
