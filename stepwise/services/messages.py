"""The messages services exchange over a queue, and the records the control plane keeps.

Names follow llama-agents (`QueueMessage`, `ActionTypes`, `TaskDefinition`, `TaskResult`,
`ServiceDefinition`) so its users feel at home. A message is routed by its `type`: a
service's name, `control_plane` or `human`.
"""

from __future__ import annotations

import time
import uuid
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

__all__ = [
    "CONTROL_PLANE",
    "ActionTypes",
    "NewTask",
    "QueueMessage",
    "QueueMessageStats",
    "ServiceDefinition",
    "TaskDefinition",
    "TaskResult",
    "ToolCall",
    "ToolCallResult",
    "hop_id_of",
    "new_id",
]

CONTROL_PLANE = "control_plane"
"""The message type the control plane consumes."""


def new_id() -> str:
    """A fresh random id (hex, 32 characters)."""
    return uuid.uuid4().hex


class ActionTypes(StrEnum):
    """What a message asks its receiver to do."""

    NEW_TASK = "new_task"  # to a service: run this task (or hop); to the control plane: track it
    COMPLETED_TASK = "completed_task"  # to the control plane: a service finished its hop
    REQUEST_FOR_HELP = "request_for_help"  # to a human service: a person is asked
    NEW_TOOL_CALL = "new_tool_call"  # to a tool service: run this tool
    COMPLETED_TOOL_CALL = "completed_tool_call"  # back to the caller: the tool's result
    DEAD_LETTER = "dead_letter"  # to the control plane: a message failed for good


class QueueMessageStats(BaseModel):
    """When a message was published and handled (seconds since the epoch)."""

    publish_time: float | None = None
    process_start_time: float | None = None
    process_end_time: float | None = None


class QueueMessage(BaseModel):
    """One message on a queue.

    `id_` is stable across redeliveries: handlers use it to do their work once
    (at-least-once delivery, exactly-once effect).
    """

    id_: str = Field(default_factory=new_id, description="Stable across redeliveries.")
    publisher_id: str = Field(default="default", description="Who published it.")
    type: str = Field(default="default", description="Routing: the consumer's message type.")
    action: ActionTypes | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    stats: QueueMessageStats = Field(default_factory=QueueMessageStats)
    delivery_count: int = Field(
        default=1, description="Set by the queue on delivery: 1 the first time, more on retries."
    )

    def stamped(self) -> QueueMessage:
        """A copy with its publish time set now."""
        stats = self.stats.model_copy(update={"publish_time": time.time()})
        return self.model_copy(update={"stats": stats})


def hop_id_of(message: QueueMessage) -> str:
    """The hop a message is about (a hop's NEW_TASK or its result), or "" for none."""
    hop_id = message.data.get("hop_id")
    if hop_id is None and isinstance(message.data.get("data"), dict):
        hop_id = message.data["data"].get("hop_id")  # A TaskResult keeps it in its data.
    return hop_id if isinstance(hop_id, str) else ""


class TaskDefinition(BaseModel):
    """A task as the control plane tracks it, and as a service receives one hop of it."""

    task_id: str = Field(default_factory=new_id)
    input: str
    session_id: str | None = None
    step_mode: bool = Field(
        default=False, description="Pause before each hop for a person to approve it."
    )


NewTask = TaskDefinition


class TaskResult(BaseModel):
    """What a service returns for one hop, and the control plane for a whole task."""

    task_id: str
    result: str
    history: list[dict[str, Any]] = Field(default_factory=list)
    data: dict[str, Any] = Field(default_factory=dict)


class ServiceDefinition(BaseModel):
    """A registered service: its name routes messages; its description guides orchestrators."""

    service_name: str
    description: str
    prompt: list[dict[str, Any]] = Field(default_factory=list)
    host: str | None = None
    port: int | None = None


class ToolCall(BaseModel):
    """A request that a tool service run one tool."""

    id_: str = Field(default_factory=new_id)
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    source_id: str = Field(description="The message type the result goes back to.")


class ToolCallResult(BaseModel):
    """The output of a tool a tool service ran (`is_error` when it failed or timed out)."""

    id_: str
    tool_name: str
    content: str
    is_error: bool = False
