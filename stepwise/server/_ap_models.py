"""The Agent Protocol v1's models, with its field names and types exactly.

Stepwise's own fields (the step's kind, branch, proposed input, usage, tool calls, error)
travel in `additional_output`, which the protocol leaves open.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "Artifact",
    "ArtifactList",
    "Pagination",
    "Step",
    "StepList",
    "StepRequestBody",
    "Task",
    "TaskList",
    "TaskRequestBody",
]


class Artifact(BaseModel):
    """A file in the task's workspace."""

    artifact_id: str = Field(description="Stable id of the file (its path, URL-safe encoded).")
    agent_created: bool = Field(description="Whether a step of the agent wrote it.")
    file_name: str = Field(description="The file's name.")
    relative_path: str | None = Field(
        default=None, description="Its path in the workspace, with '/'."
    )


class Pagination(BaseModel):
    """Where a page lies in a listing."""

    total_items: int
    total_pages: int
    current_page: int
    page_size: int


class TaskRequestBody(BaseModel):
    """A new task."""

    input: str | None = Field(default=None, description="The task, in words.")
    additional_input: dict[str, Any] | None = Field(
        default=None,
        description='{"agent": "<registered name>"} picks an agent of the server; '
        '{"continue_from": "<task id>"} goes on from a finalized task\'s conversation.',
    )


class Task(BaseModel):
    """A task and its files."""

    task_id: str
    input: str | None = None
    additional_input: dict[str, Any] | None = None
    artifacts: list[Artifact] = Field(default_factory=list)


class StepRequestBody(BaseModel):
    """Run the task's next step; a non-empty `input` replaces that step's input (steering)."""

    input: str | None = Field(default=None, description="Steering: the step's input instead.")
    additional_input: dict[str, Any] | None = None


class Step(BaseModel):
    """One step of a task."""

    task_id: str
    step_id: str
    name: str | None = Field(default=None, description="What the step does, in a few words.")
    status: Literal["created", "running", "completed"] = Field(
        description="`created`: it may run (upcoming, failed, or interrupted: its process "
        "died mid-step); `running`: a run holds it now; `completed`: done (or undone, skipped)."
    )
    input: str | None = None
    additional_input: dict[str, Any] | None = None
    output: str | None = None
    additional_output: dict[str, Any] | None = Field(
        default=None, description="Stepwise's fields: kind, status, number, usage, tool calls..."
    )
    artifacts: list[Artifact] = Field(default_factory=list)
    is_last: bool = False


class TaskList(BaseModel):
    """A page of tasks."""

    tasks: list[Task]
    pagination: Pagination


class StepList(BaseModel):
    """A page of steps."""

    steps: list[Step]
    pagination: Pagination


class ArtifactList(BaseModel):
    """A page of artifacts."""

    artifacts: list[Artifact]
    pagination: Pagination
