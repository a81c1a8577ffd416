"""The storage contract: a runner hands a store one `TaskChange` per operation.

A change holds only what that operation touched (the task row, the steps it changed, new
messages), so a step's commit costs the same at step 5 and at step 500, and the store writes
it in one transaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from agent_core.llms.base import ChatMessage, Usage
from agent_core.types import StepSnapshot, Task, TaskState, TaskStatus, TaskStep, TaskStepOutput

__all__ = [
    "MemoryWrite",
    "PromptCopy",
    "SettingsStore",
    "Store",
    "StoreClock",
    "TaskChange",
    "TaskSummary",
    "store_now",
]


@dataclass(frozen=True, slots=True)
class PromptCopy:
    """Prompts to copy from another task: `steps` maps the new step ids to the original's."""

    task_id: str
    steps: dict[str, str]


@dataclass(slots=True)
class MemoryWrite:
    """Keep the first `keep` messages of a task's memory, then append `append`."""

    keep: int
    append: list[ChatMessage] = field(default_factory=list)
    truncate: bool = True
    """False when the store holds exactly `keep` messages already (a plain append)."""


@dataclass(slots=True)
class TaskChange:
    """Everything one runner operation changed in one task, written atomically.

    `base_version` is the version the runner last saw; a store refuses the change with
    `ConflictError` when another runner committed since. `None` creates the task.
    """

    state: TaskState
    base_version: int | None
    steps: list[TaskStep] = field(default_factory=list)
    outputs: list[TaskStepOutput] = field(default_factory=list)
    snapshots: list[StepSnapshot] = field(default_factory=list)
    dropped_snapshots: list[str] = field(default_factory=list)
    dropped_steps: list[str] = field(default_factory=list)
    memory: MemoryWrite | None = None
    stored_outputs: dict[str, Any] = field(default_factory=dict)
    """Outputs (by step id) in the form this store read them: a fork's copies, never read, are
    written back as they were stored instead of validated and serialised again."""
    stored_snapshots: dict[str, Any] = field(default_factory=dict)
    """Undo snapshots (by step id) in the form this store read them, as `stored_outputs`."""
    prompts_from: PromptCopy | None = None
    """A new fork's steps whose prompts are the original's: copied with their log prefix."""
    task_row: bool = True
    """False when only the version moves (claiming a step changes no task field)."""
    ledger_key: str | None = None
    """When creating a task: the key of the outside request it answers, recorded in the
    store's task ledger in this same transaction (see `agent_core.store.ledger`)."""

    @property
    def task(self) -> Task:
        """The task whose row is rewritten (it is small: memory is stored apart)."""
        return self.state.task


class TaskSummary(BaseModel):
    """One line of a task list: enough to show and pick a task without loading its steps."""

    task_id: str
    input: str
    status: TaskStatus
    created_at: datetime
    updated_at: datetime
    steps_completed: int
    steps_upcoming: int
    usage: Usage
    imported: bool = False
    """The task is a read-only copy imported from a trace."""
    thread_id: str = ""
    """The task's conversation thread (`Task.thread_id`); "" for a damaged row."""
    damaged: str = ""
    """Why the task's stored row cannot be read ("" when it can); such a task is listed as
    failed so that it can be found and deleted."""


@runtime_checkable
class Store(Protocol):
    """Where a runner keeps tasks so that they outlive the process (or a browser tab)."""

    def commit(self, change: TaskChange) -> None:
        """Write `change` atomically; raise `ConflictError` if the task moved on meanwhile."""
        ...

    def load_task(self, task_id: str) -> TaskState | None:
        """The task's whole state, or None when the store has no such task."""
        ...

    def task_version(self, task_id: str) -> int | None:
        """The task's current version (cheap), or None when there is no such task."""
        ...

    def load_messages_sent(self, task_id: str, step_id: str) -> list[ChatMessage]:
        """The messages the step sent to its model ([] when none are stored).

        Kept apart from the step's output (`load_task` leaves `messages_sent` empty), since
        each holds the history the model saw.
        """
        ...

    def list_tasks(self) -> list[TaskSummary]:
        """Every task, newest first."""
        ...

    def delete_task(self, task_id: str) -> bool:
        """Remove a task and everything of it; False when there was none."""
        ...

    def load_conversation(self, conversation_id: str) -> list[ChatMessage]:
        """The runner's shared conversation (what finalized tasks added)."""
        ...

    def write_conversation(self, conversation_id: str, write: MemoryWrite) -> None:
        """Apply `write` to the shared conversation."""
        ...

    def add_commit_listener(self, listener: Callable[[TaskState], None]) -> Callable[[], None]:
        """Call `listener(state)` after each commit of this store object, once it is durable.

        It runs on the committing thread and must not block. Returns the function that removes
        it. Commits of other processes (or other store objects on one file) are not told: a
        host's change feed hears those.
        """
        ...

    def close(self) -> None:
        """Release the store's resources."""
        ...


@runtime_checkable
class SettingsStore(Protocol):
    """Where an app keeps its settings: named JSON values, apart from any task.

    A runner never reads settings; the app (its chosen model, a server's address, prices)
    does. `SQLiteStore` keeps them in the same file as the tasks, in a table of their own.
    """

    def get_setting(self, name: str) -> Any | None:
        """The JSON value saved under `name`, or None when there is none."""
        ...

    def put_setting(self, name: str, value: Any) -> None:
        """Save a JSON-serialisable `value` under `name`, replacing the old one; None removes it.

        Settings are for choices that are not secret (a model, a server's address, prices):
        the store writes them in the clear, like everything else it keeps.
        """
        ...


@runtime_checkable
class StoreClock(Protocol):
    """A store with a clock of its own, which every process sharing it reads alike.

    Optional (a `Store` without it is judged by this machine's clock, `store_now`): the
    deadlines of step claims are compared with it, so machines whose clocks disagree agree.
    """

    def now(self) -> float:
        """The store's time, in seconds since the epoch (the database server's, if any)."""
        ...


def store_now(store: object) -> float:
    """`store.now()` where the store has a clock, else this machine's `time.time()`."""
    if isinstance(store, StoreClock):
        return float(store.now())
    return time.time()
