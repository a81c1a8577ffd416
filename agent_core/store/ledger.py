"""A task ledger: which task an outside request started, and its result, kept beside the tasks.

A queue delivers a message at least once. A consumer that runs each message as a task
(`stepwise.services`' `AgentService`, one task per hop) records the message's key with the
task it creates, in the same transaction as the task (`AgentRunner.create_task(...,
ledger_key=key)`): a crash leaves either both or neither, never a task nobody will resume.
When the task has run to its end, its result is recorded, so that a redelivered message is
answered again without running the agent twice. Entries are trimmed (`trim_ledger`): the
ledger stays bounded however many messages pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

__all__ = ["LedgerEntry", "TaskLedger"]


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """The task a request started, and the result it gave once it finished."""

    key: str
    task_id: str
    created_at: datetime
    result: str | None = None
    """None until the task ran to its end (`TaskLedger.finish_ledger_entry`)."""
    finished_at: datetime | None = None


@runtime_checkable
class TaskLedger(Protocol):
    """A store that keeps a task ledger (`SQLiteStore` and `InMemoryStore` do).

    The entry is written by the store's `commit` of the change that creates the task, when
    the change has a `ledger_key`; a key that is already in the ledger refuses that change
    with `ConflictError`, and nothing of it is written.
    """

    def ledger_entry(self, key: str) -> LedgerEntry | None:
        """The entry recorded under `key`, or None when there is none."""
        ...

    def finish_ledger_entry(self, key: str, result: str) -> None:
        """Record the result of the task under `key` (in one transaction)."""
        ...

    def trim_ledger(self, *, finished_before: datetime, keep_at_most: int) -> int:
        """Drop the entries finished before `finished_before`, then the oldest past a count.

        After the finished ones, the oldest entries beyond `keep_at_most` go whatever their
        state (a request that old is not coming back). Returns how many were dropped.
        """
        ...
