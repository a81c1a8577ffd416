"""`InMemoryStore`: the store for tests and notebooks; gone when the process ends.

Records are kept as JSON, exactly as `SQLiteStore` keeps them, so two runners on one
`InMemoryStore` never share live objects and a round-trip bug shows up in tests.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from agent_core.errors import ConflictError
from agent_core.llms.base import ChatMessage
from agent_core.store._prompt_log import PromptLog, copied_prompts, decode_prompt, encode_prompts
from agent_core.store._records import (
    assemble_state,
    output_record,
    setting_record,
    summary_of,
    task_record,
)
from agent_core.store.base import MemoryWrite, PromptCopy, TaskChange, TaskSummary
from agent_core.store.ledger import LedgerEntry
from agent_core.store.listeners import CommitListener, CommitListeners
from agent_core.types import TaskState, TaskStep, utcnow

__all__ = ["InMemoryStore"]


@dataclass
class _TaskRecords:
    task_input: str
    task_json: str
    extra_state_json: str
    version: int
    summary: TaskSummary
    messages: list[ChatMessage] = field(default_factory=list)
    steps: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    snapshots: dict[str, str] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    prompt_log: PromptLog = field(default_factory=PromptLog)
    """Encodes prompts as runs into `log_rows`, the task's logged messages as JSON."""
    log_rows: list[str] = field(default_factory=list)


def _apply_memory(messages: list[ChatMessage], write: MemoryWrite) -> None:
    del messages[write.keep :]
    messages.extend(write.append)


class InMemoryStore:
    """Keeps tasks in a dict of JSON records, guarded by a lock for use from several threads."""

    def __init__(self) -> None:
        self._tasks: dict[str, _TaskRecords] = {}
        self._conversations: dict[str, list[ChatMessage]] = {}
        self._settings: dict[str, str] = {}
        self._ledger: dict[str, LedgerEntry] = {}
        self._lock = threading.Lock()
        self._listeners = CommitListeners()

    def add_commit_listener(self, listener: CommitListener) -> Callable[[], None]:
        """Hear each commit of this store (see `Store.add_commit_listener`)."""
        return self._listeners.add(listener)

    def commit(self, change: TaskChange) -> None:
        """Apply `change` atomically (under the store's lock)."""
        state = change.state
        with self._lock:
            records = self._tasks.get(state.task_id)
            current = records.version if records else None
            if current != change.base_version:
                raise ConflictError(
                    f"task {state.task_id} was changed by another runner (version {current}, "
                    f"expected {change.base_version}); reload it and try again",
                    task_id=state.task_id,
                    code="task_changed",
                    params={"version": current, "expected": change.base_version},
                )
            key = change.ledger_key
            if key is not None and key in self._ledger:
                held = self._ledger[key].task_id
                raise ConflictError(
                    f"the ledger key {key!r} already names task {held}, so task "
                    f"{state.task_id} was not created; read the entry (ledger_entry) and "
                    "carry on with that task",
                    task_id=held,
                )
            if records is None:
                records = _TaskRecords(state.task.input, "", "", 0, summary_of(state))
                self._tasks[state.task_id] = records
            self._write(records, change)
            if key is not None:
                self._ledger[key] = LedgerEntry(key, state.task_id, utcnow())
        self._listeners.tell(state)

    def _write(self, records: _TaskRecords, change: TaskChange) -> None:
        state = change.state
        records.version = state.version
        if change.task_row:
            records.task_json = task_record(state)
            records.extra_state_json = state.extra_state_json
            records.summary = summary_of(state)
        for step in change.steps:
            records.steps[step.step_id] = step.model_dump_json()
        for output in change.outputs:
            records.outputs[output.task_step.step_id] = output_record(output)
        records.outputs.update(change.stored_outputs)  # As this store wrote them.
        for snapshot in change.snapshots:
            records.snapshots[snapshot.step_id] = snapshot.model_dump_json()
        records.snapshots.update(change.stored_snapshots)
        if change.prompts_from is not None:
            self._copy_prompts(records, change.prompts_from)
        for step_id in change.dropped_snapshots:
            records.snapshots.pop(step_id, None)
        prompts, appended = encode_prompts(records.prompt_log, change.outputs)
        records.prompts.update(prompts)
        records.log_rows.extend(row for _, row in appended)
        for step_id in change.dropped_steps:
            records.steps.pop(step_id, None)
            records.outputs.pop(step_id, None)
            records.prompts.pop(step_id, None)
        if change.memory is not None:
            _apply_memory(records.messages, change.memory)

    def _copy_prompts(self, records: _TaskRecords, source: PromptCopy) -> None:
        """A new fork's prompts: the original's records, and the prefix of its log they name."""
        original = self._tasks.get(source.task_id)
        if original is None:
            return
        prompts, end = copied_prompts(original.prompts.items(), source.steps)
        records.prompts.update(prompts)
        records.log_rows.extend(original.log_rows[:end])
        records.prompt_log.extend(original.prompt_log.messages[:end])

    def load_task(self, task_id: str) -> TaskState | None:
        """The stored task, rebuilt from its records."""
        with self._lock:
            records = self._tasks.get(task_id)
            if records is None:
                return None
            return assemble_state(
                task_input=records.task_input,
                task_json=records.task_json,
                extra_state_json=records.extra_state_json,
                version=records.version,
                messages=list(records.messages),
                steps=[TaskStep.model_validate_json(s) for s in records.steps.values()],
                outputs=list(records.outputs.items()),
                snapshots=list(records.snapshots.items()),
            )

    def load_messages_sent(self, task_id: str, step_id: str) -> list[ChatMessage]:
        """The messages the step sent to its model ([] when none are stored)."""
        with self._lock:
            records = self._tasks.get(task_id)
            if records is None or not (prompt := records.prompts.get(step_id)):
                return []
            rows = records.log_rows
            return decode_prompt(prompt, lambda runs: [r for a, b in runs for r in rows[a:b]])

    def task_version(self, task_id: str) -> int | None:
        """The task's version, or None."""
        records = self._tasks.get(task_id)
        return records.version if records else None

    def list_tasks(self) -> list[TaskSummary]:
        """Every task, newest first."""
        with self._lock:
            summaries = [records.summary for records in self._tasks.values()]
        return sorted(summaries, key=lambda s: s.created_at, reverse=True)

    def delete_task(self, task_id: str) -> bool:
        """Forget a task; False when there was none."""
        with self._lock:
            return self._tasks.pop(task_id, None) is not None

    def load_conversation(self, conversation_id: str) -> list[ChatMessage]:
        """The shared conversation's messages."""
        with self._lock:
            return list(self._conversations.get(conversation_id, []))

    def write_conversation(self, conversation_id: str, write: MemoryWrite) -> None:
        """Apply `write` to the shared conversation."""
        with self._lock:
            _apply_memory(self._conversations.setdefault(conversation_id, []), write)

    def get_setting(self, name: str) -> Any | None:
        """The JSON value saved under `name`, or None (a fresh copy: edits do not write back)."""
        with self._lock:
            data = self._settings.get(name)
        return None if data is None else json.loads(data)

    def put_setting(self, name: str, value: Any) -> None:
        """Save `value` (plain JSON data) under `name`; None removes the setting."""
        if value is None:
            with self._lock:
                self._settings.pop(name, None)
            return
        data = setting_record(name, value)
        with self._lock:
            self._settings[name] = data

    def ledger_entry(self, key: str) -> LedgerEntry | None:
        """The entry recorded under `key`, or None when there is none."""
        with self._lock:
            return self._ledger.get(key)

    def finish_ledger_entry(self, key: str, result: str) -> None:
        """Record the result of the task under `key`."""
        with self._lock:
            entry = self._ledger.get(key)
            if entry is not None:
                self._ledger[key] = replace(entry, result=result, finished_at=utcnow())

    def trim_ledger(self, *, finished_before: datetime, keep_at_most: int) -> int:
        """Drop the entries finished before `finished_before`, then the oldest past a count."""
        with self._lock:
            before = len(self._ledger)
            kept = [
                entry
                for entry in self._ledger.values()
                if entry.finished_at is None or entry.finished_at >= finished_before
            ]
            kept.sort(key=lambda entry: entry.created_at, reverse=True)
            self._ledger = {entry.key: entry for entry in kept[: max(keep_at_most, 0)]}
            return before - len(self._ledger)

    def now(self) -> float:
        """This machine's clock: only this process shares the store (`StoreClock`)."""
        return time.time()

    def close(self) -> None:
        """Nothing to release."""
