"""What the control plane keeps and serves: services, tasks, hops and human requests.

These are the bodies of its HTTP API too, so the app's Services page and the client read
the same shapes the control plane stores.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

__all__ = [
    "TASK_LIST_TEXT_LIMIT",
    "HopRecord",
    "HopStatus",
    "HumanRequest",
    "HumanRequestStatus",
    "ServiceKind",
    "ServiceRecord",
    "TaskRecord",
    "TaskStatus",
]


TASK_LIST_TEXT_LIMIT = 2_000
"""The most characters of a task's input, result and error a list of tasks carries: a list
stays small whatever a queue message held (a 10 MB result is read whole from its task)."""


class ServiceKind(StrEnum):
    """What a service does; orchestrators send hops to `agent` and `human` services only."""

    AGENT = "agent"
    HUMAN = "human"
    TOOL = "tool"


class TaskStatus(StrEnum):
    """Where a task is: running, paused for a person, or ended."""

    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"  # Step mode: a proposed hop waits for a person.
    AWAITING_HUMAN = "awaiting_human"  # A human service's request waits in the inbox.
    COMPLETED = "completed"
    FAILED = "failed"

    @property
    def ended(self) -> bool:
        """Whether the task will change no more."""
        return self in (TaskStatus.COMPLETED, TaskStatus.FAILED)


class HopStatus(StrEnum):
    """Where one hop (a message to a service) is."""

    PENDING = "pending"  # Proposed in step mode, waiting for approve, edit or reject.
    SENT = "sent"  # Published to its service; no result yet.
    COMPLETED = "completed"
    FAILED = "failed"
    REJECTED = "rejected"


class HumanRequestStatus(StrEnum):
    """Whether a person answered the request yet."""

    WAITING = "waiting"
    ANSWERED = "answered"


class ServiceRecord(BaseModel):
    """A registered service."""

    service_name: str
    description: str
    kind: ServiceKind = ServiceKind.AGENT
    host: str | None = None
    port: int | None = None
    registered_at: float


class TaskRecord(BaseModel):
    """A task as the control plane tracks it."""

    task_id: str
    input: str
    status: TaskStatus
    step_mode: bool = False
    session_id: str | None = None
    result: str | None = None
    error: str | None = Field(default=None, description="Why the task failed.")
    hop_count: int = 0
    created_at: float
    updated_at: float
    truncated: bool = Field(
        default=False,
        description="A list cut `input`, `result` or `error` to `TASK_LIST_TEXT_LIMIT` "
        "characters; GET /tasks/{task_id} has them whole.",
    )


class HopRecord(BaseModel):
    """One hop of a task: the service the orchestrator proposed, and the one that ran.

    `proposed_*` is what the orchestrator asked for; `service_name` and `input` are what was
    sent. They differ when a person edited the hop in step mode (`edited`), which a hop DAG
    draws as the proposal crossed out beside what ran.
    """

    hop_id: str
    task_id: str
    seq: int = Field(description="1 for the task's first hop, then 2, 3, ...")
    status: HopStatus
    proposed_service: str
    proposed_input: str
    service_name: str | None = Field(default=None, description="None until sent.")
    input: str | None = None
    edited: bool = False
    result: str | None = None
    error: str | None = None
    service_task_id: str | None = Field(
        default=None, description="The Stepwise task the service ran it as (agent services)."
    )
    message_id: str = Field(description="The id of the NEW_TASK message sent to the service.")
    created_at: float
    updated_at: float


class HumanRequest(BaseModel):
    """A question a human service asks, waiting in the inbox until a person answers it."""

    request_id: str
    task_id: str
    hop_id: str | None = None
    service_name: str
    prompt: str
    status: HumanRequestStatus = HumanRequestStatus.WAITING
    answer: str | None = None
    reply_to: str
    created_at: float
    answered_at: float | None = None
