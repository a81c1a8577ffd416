"""`SQLiteStore`: the default, embedded, durable store (one file, WAL mode).

Each `commit` is one `BEGIN IMMEDIATE` transaction that first checks the task's version, so
two runners on one file (two browser tabs, two processes) cannot interleave half a step: the
later one gets `ConflictError` and reloads. A process killed mid-step loses nothing
committed; the step it was running stays `running` in the file and is re-runnable.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from agent_core.errors import ConflictError, StoreError
from agent_core.llms.base import ChatMessage, Usage
from agent_core.store._blobs import pack, unpack
from agent_core.store._prompt_log import (
    PromptLog,
    PromptLogs,
    copied_prompts,
    decode_prompt,
    encode_prompts,
)
from agent_core.store._records import (
    assemble_state,
    damaged_summary,
    output_record,
    paused_gc,
    setting_record,
    task_record,
)
from agent_core.store.base import MemoryWrite, PromptCopy, TaskChange, TaskSummary
from agent_core.store.ledger import LedgerEntry
from agent_core.store.listeners import CommitListener, CommitListeners
from agent_core.types import TaskState, TaskStatus, TaskStep, utcnow

__all__ = ["SQLiteStore"]

_TABLES = [
    """CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    steps_completed INTEGER NOT NULL,
    steps_upcoming INTEGER NOT NULL,
    usage TEXT NOT NULL,
    task TEXT NOT NULL,
    extra_state TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS tasks_by_created ON tasks (created_at)",
    "CREATE TABLE IF NOT EXISTS messages (owner TEXT NOT NULL, idx INTEGER NOT NULL, "
    "data TEXT NOT NULL, PRIMARY KEY (owner, idx)) WITHOUT ROWID",
]

# Steps live in a rowid table (appending fills the last page) with their small key in an index
# whose right edge takes new rows, since ids sort by creation time.
_STEPS_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS steps (task_id TEXT NOT NULL, step_id TEXT NOT NULL, "
    "data TEXT NOT NULL, output TEXT, snapshot TEXT)",
    "CREATE UNIQUE INDEX IF NOT EXISTS steps_key ON steps (task_id, step_id)",
]

# The messages each step sent its model, apart from the step: each holds the history the
# model saw, and loading a task must not read them all again.
_PROMPTS_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS prompts (task_id TEXT NOT NULL, step_id TEXT NOT NULL, "
    "data TEXT NOT NULL, PRIMARY KEY (task_id, step_id)) WITHOUT ROWID",
]

# Each task's log of the messages its steps sent, each once (`agent_core.store._prompt_log`):
# a prompt row written since layout 5 is a few runs into it. Large values are zlib BLOBs.
_PROMPT_LOG_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS prompt_log (task_id TEXT NOT NULL, idx INTEGER NOT NULL, "
    "data NOT NULL, PRIMARY KEY (task_id, idx)) WITHOUT ROWID",
]

# An app's settings that are not secret (its model, a server's address, prices), as JSON.
_SETTINGS_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL) "
    "WITHOUT ROWID",
]

# The task ledger (`agent_core.store.ledger`): an outside request's key, the task it started
# and, once that task ran to its end, its result. Trimming reads the two timestamps.
_LEDGER_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS task_ledger (key TEXT PRIMARY KEY, task_id TEXT NOT NULL, "
    "created_at TEXT NOT NULL, result TEXT, finished_at TEXT) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS task_ledger_by_created ON task_ledger (created_at)",
    "CREATE INDEX IF NOT EXISTS task_ledger_by_finished ON task_ledger (finished_at) "
    "WHERE finished_at IS NOT NULL",
]

_SCHEMA = [
    *_TABLES,
    *_STEPS_SCHEMA,
    *_SETTINGS_SCHEMA,
    *_PROMPTS_SCHEMA,
    *_LEDGER_SCHEMA,
    *_PROMPT_LOG_SCHEMA,
]

_LAYOUT_VERSION = 5
"""`PRAGMA user_version` of the current layout. Layout 0 keyed steps by `step_id` (with a second
index by task): three B-trees to touch per new step instead of two. Layout 1 had no settings
table, layout 2 no prompts table, layout 3 no task ledger, layout 4 no prompt log (its prompt rows
hold whole prompts, and still read as they are; step outputs were never compressed). Older
code opens a newer file, but cannot read the prompts or compressed outputs written since."""

_LEDGER_LAYOUT = 4
"""The first layout with a task ledger."""

# Before the ledger had its table, `stepwise.services` kept it in settings named
# `stepwise.services.hop:<service>:<message id>`, holding {"task_id", "result"?}: a file of an
# older layout has those entries moved into the ledger (keyed `<service>:<message id>`, as the
# services key them now), so a hop in flight across the upgrade still runs once.
_OLD_LEDGER_SETTINGS = "stepwise.services.hop:"
_MIGRATE_OLD_LEDGER = [
    (
        "INSERT OR IGNORE INTO task_ledger (key, task_id, created_at, result, finished_at) "
        "SELECT substr(name, :start), json_extract(value, '$.task_id'), :now, "
        "json_extract(value, '$.result'), "
        "CASE WHEN json_type(value, '$.result') = 'text' THEN :now END "
        "FROM settings WHERE substr(name, 1, :length) = :prefix AND json_valid(value) "
        "AND json_type(value, '$.task_id') = 'text'"
    ),
    "DELETE FROM settings WHERE substr(name, 1, :length) = :prefix",
]

_STEPS_KEYED_BY_TASK = 1
"""The first layout whose steps need no re-keying."""

_MIGRATE_LAYOUT_0 = [
    "ALTER TABLE steps RENAME TO steps_layout_0",
    "DROP INDEX IF EXISTS steps_by_task",
    *_STEPS_SCHEMA,
    "INSERT INTO steps (task_id, step_id, data, output, snapshot) "
    "SELECT task_id, step_id, data, output, snapshot FROM steps_layout_0 ORDER BY rowid",
    "DROP TABLE steps_layout_0",
]

# A step, its output and its undo snapshot share one row, so completing a step is one upsert.
# A NULL output or snapshot keeps the stored one; an empty snapshot drops it (undo).
_UPSERT_STEP = (
    "INSERT INTO steps (task_id, step_id, data, output, snapshot) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (task_id, step_id) DO UPDATE SET data = excluded.data, "
    "output = COALESCE(excluded.output, steps.output), "
    "snapshot = CASE WHEN excluded.snapshot = '' THEN NULL "
    "ELSE COALESCE(excluded.snapshot, steps.snapshot) END"
)

# Conversations share the messages table with tasks, under an owner key that no task id
# (a hex uuid) can take.
_CONVERSATION_PREFIX = "conversation:"


class SQLiteStore:
    """Tasks in one SQLite file; safe to share between threads and processes.

    Args:
        path: The database file (created if missing), or ":memory:".
        timeout: Seconds to wait for another process's write lock before failing.
    """

    def __init__(self, path: str | Path = "stepwise.db", *, timeout: float = 10.0) -> None:
        self.path = str(path)
        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode survives a process crash; only an OS crash may drop the
            # last commits, never corrupt the file.
            self._db.execute("PRAGMA synchronous=NORMAL")
            (layout,) = self._db.execute("PRAGMA user_version").fetchone()
            if layout < _LAYOUT_VERSION:  # New or older file; a current one needs no lock.
                self._create_or_migrate()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the SQLite store at {self.path}: {exc}") from exc
        self._lock = threading.Lock()
        self._listeners = CommitListeners()
        self._prompt_logs = PromptLogs()

    def add_commit_listener(self, listener: CommitListener) -> Callable[[], None]:
        """Hear each commit of this store object (see `Store.add_commit_listener`)."""
        return self._listeners.add(listener)

    def _create_or_migrate(self) -> None:
        """Create the tables, or bring a file of an older layout up to date.

        A layout-0 file has its steps re-keyed, keeping their order; tables added since are
        created empty.
        """
        self._db.execute("BEGIN IMMEDIATE")  # Checked inside: another process may do it too.
        try:
            (layout,) = self._db.execute("PRAGMA user_version").fetchone()
            old = self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'steps'"
            ).fetchone()
            if layout < _STEPS_KEYED_BY_TASK and old is not None:
                for statement in _MIGRATE_LAYOUT_0:
                    self._db.execute(statement)
            for statement in _SCHEMA:
                self._db.execute(statement)
            if layout < _LEDGER_LAYOUT:
                self._move_old_ledger()
            self._db.execute(f"PRAGMA user_version = {_LAYOUT_VERSION}")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _move_old_ledger(self) -> None:
        prefix = _OLD_LEDGER_SETTINGS
        values = {
            "prefix": prefix,
            "length": len(prefix),
            "start": len(prefix) + 1,
            "now": utcnow().isoformat(),
        }
        for statement in _MIGRATE_OLD_LEDGER:
            self._db.execute(statement, values)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(_cannot("write to", self.path, exc)) from exc
            try:
                yield self._db
            except BaseException:
                self._rollback()
                raise
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                raise StoreError(_cannot("commit to", self.path, exc)) from exc

    def _rollback(self) -> None:
        """Undo the open transaction, if SQLite has not already (it does on a full disk).

        A failed rollback must never hide the error that made it necessary.
        """
        if not self._db.in_transaction:
            return
        try:
            self._db.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # The cause is being raised; SQLite rolls back a broken transaction itself.

    def commit(self, change: TaskChange) -> None:
        """Write `change` in one transaction, if the task is still at `change.base_version`."""
        state = change.state
        try:
            self._commit(change)
        except BaseException:
            self._prompt_logs.drop(state.task_id)  # It may hold what was rolled back.
            raise
        self._listeners.tell(state)

    def _commit(self, change: TaskChange) -> None:
        state = change.state
        with self._transaction() as db:
            try:
                written = self._write_task_row(db, change)
                if not written:
                    raise self._conflict(db, state.task_id, change.base_version)
                self._write_rows(db, change)
                if change.ledger_key is not None:
                    self._write_ledger_entry(db, change.ledger_key, state.task_id)
            except sqlite3.IntegrityError:
                raise self._conflict(db, state.task_id, change.base_version) from None
            except sqlite3.Error as exc:
                raise StoreError(_cannot(f"write task {state.task_id} to", self.path, exc)) from exc

    @staticmethod
    def _conflict(db: sqlite3.Connection, task_id: str, expected: int | None) -> ConflictError:
        row = db.execute("SELECT version FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
        version = row[0] if row else None
        return ConflictError(
            f"task {task_id} was changed by another runner (version "
            f"{version}, expected {expected}); reload it and try again",
            task_id=task_id,
            code="task_changed",
            params={"version": version, "expected": expected},
        )

    @staticmethod
    def _write_task_row(db: sqlite3.Connection, change: TaskChange) -> bool:
        """Insert or compare-and-update the task row; False when the version moved on."""
        state, task = change.state, change.state.task
        if change.base_version is None:
            db.execute(
                "INSERT INTO tasks (task_id, version, created_at, input, status, updated_at, "
                "steps_completed, steps_upcoming, usage, task, extra_state) "
                "VALUES (?, ?, ?, ?, '', '', 0, 0, '', '', '')",
                (task.task_id, state.version, task.created_at.isoformat(), task.input),
            )
        elif not change.task_row:  # Only the version moves (a step was claimed).
            cursor = db.execute(
                "UPDATE tasks SET version = ? WHERE task_id = ? AND version = ?",
                (state.version, task.task_id, change.base_version),
            )
            return cursor.rowcount == 1
        cursor = db.execute(
            "UPDATE tasks SET version = ?, status = ?, updated_at = ?, steps_completed = ?, "
            "steps_upcoming = ?, usage = ?, task = ?, extra_state = ? "
            "WHERE task_id = ? AND version = ?",
            (
                state.version,
                task.status.value,
                task.updated_at.isoformat(),
                len(state.completed),
                len(state.queue),
                task.usage.model_dump_json(),
                task_record(state),
                state.extra_state_json,
                task.task_id,
                state.version if change.base_version is None else change.base_version,
            ),
        )
        return cursor.rowcount == 1

    def _write_rows(self, db: sqlite3.Connection, change: TaskChange) -> None:
        task_id = change.state.task_id
        outputs = {o.task_step.step_id: pack(output_record(o)) for o in change.outputs}
        outputs.update(change.stored_outputs)  # As this store wrote them: packed already.
        snapshots = {s.step_id: s.model_dump_json() for s in change.snapshots}
        snapshots.update(change.stored_snapshots)
        snapshots.update((step_id, "") for step_id in change.dropped_snapshots)
        rows = [
            (
                task_id,
                s.step_id,
                s.model_dump_json(),
                outputs.get(s.step_id),
                snapshots.get(s.step_id),
            )
            for s in change.steps
        ]
        if rows:
            db.executemany(_UPSERT_STEP, rows)
        written = {s.step_id for s in change.steps}
        for column, values in (("output", outputs), ("snapshot", snapshots)):
            rest = [
                (value or None, task_id, step_id)
                for step_id, value in values.items()
                if step_id not in written
            ]
            if rest:
                db.executemany(
                    f"UPDATE steps SET {column} = ? WHERE task_id = ? AND step_id = ?", rest
                )
        self._write_prompts(db, task_id, change)
        if change.dropped_steps:
            dropped = [(task_id, i) for i in change.dropped_steps]
            db.executemany("DELETE FROM steps WHERE task_id = ? AND step_id = ?", dropped)
            db.executemany("DELETE FROM prompts WHERE task_id = ? AND step_id = ?", dropped)
        if change.memory is not None:
            self._write_messages(db, task_id, change.memory)

    def _write_prompts(self, db: sqlite3.Connection, task_id: str, change: TaskChange) -> None:
        """Each sent prompt as runs into the task's log, and the messages the log gains."""
        if change.prompts_from is not None:
            self._copy_prompts(db, task_id, change.prompts_from)
        if not any(o.messages_sent for o in change.outputs):
            return
        log = self._prompt_log(db, task_id)
        prompts, appended = encode_prompts(log, change.outputs)
        db.executemany(
            "INSERT INTO prompt_log (task_id, idx, data) VALUES (?, ?, ?)",
            [(task_id, idx, pack(data)) for idx, data in appended],
        )
        db.executemany(
            "INSERT OR REPLACE INTO prompts VALUES (?, ?, ?)",
            [(task_id, step_id, record) for step_id, record in prompts],
        )

    @staticmethod
    def _copy_prompts(db: sqlite3.Connection, task_id: str, source: PromptCopy) -> None:
        """A new fork's prompt rows: the original's, and the prefix of its log they name."""
        rows = db.execute(
            "SELECT step_id, data FROM prompts WHERE task_id = ?", (source.task_id,)
        ).fetchall()
        prompts, log_end = copied_prompts(rows, source.steps)
        db.execute(
            "INSERT INTO prompt_log (task_id, idx, data) "
            "SELECT ?, idx, data FROM prompt_log WHERE task_id = ? AND idx < ?",
            (task_id, source.task_id, log_end),
        )
        db.executemany(
            "INSERT OR REPLACE INTO prompts VALUES (?, ?, ?)",
            [(task_id, step_id, record) for step_id, record in prompts],
        )

    def _prompt_log(self, db: sqlite3.Connection, task_id: str) -> PromptLog:
        """The task's log as stored now: this object's copy, read on from where it stopped.

        The log only grows (until the task is deleted), and another process may have added
        to it: this runs inside the write transaction, so what it reads stays true.
        """
        (size,) = db.execute(
            "SELECT COALESCE(MAX(idx) + 1, 0) FROM prompt_log WHERE task_id = ?", (task_id,)
        ).fetchone()
        log = self._prompt_logs.get(task_id)
        if log is None or len(log.messages) > size:
            log = PromptLog()
        if len(log.messages) < size:
            rows = db.execute(
                "SELECT data FROM prompt_log WHERE task_id = ? AND idx >= ? ORDER BY idx",
                (task_id, len(log.messages)),
            ).fetchall()
            log.extend(ChatMessage.model_validate_json(unpack(data)) for (data,) in rows)
        self._prompt_logs.put(task_id, log)
        return log

    @staticmethod
    def _write_messages(db: sqlite3.Connection, owner: str, write: MemoryWrite) -> None:
        if write.truncate:
            db.execute("DELETE FROM messages WHERE owner = ? AND idx >= ?", (owner, write.keep))
        if write.append:
            db.executemany(
                "INSERT INTO messages (owner, idx, data) VALUES (?, ?, ?)",
                [
                    (owner, write.keep + i, message.model_dump_json())
                    for i, message in enumerate(write.append)
                ],
            )

    def _read_messages(self, owner: str) -> list[ChatMessage]:
        rows = self._db.execute(
            "SELECT data FROM messages WHERE owner = ? ORDER BY idx", (owner,)
        ).fetchall()
        return [ChatMessage.model_validate_json(data) for (data,) in rows]

    def _read_steps(self, task_id: str) -> list[tuple[str, str, str | None, str | None]]:
        # rowid order is insertion order: steps come back in the order they were created.
        return self._db.execute(
            "SELECT step_id, data, output, snapshot FROM steps WHERE task_id = ? ORDER BY rowid",
            (task_id,),
        ).fetchall()

    def load_messages_sent(self, task_id: str, step_id: str) -> list[ChatMessage]:
        """The messages the step sent to its model ([] when none are stored)."""
        with self._lock:
            row = self._db.execute(
                "SELECT data FROM prompts WHERE task_id = ? AND step_id = ?", (task_id, step_id)
            ).fetchone()
            if row is None:
                return []
            return decode_prompt(row[0], functools.partial(self._read_log, task_id))

    def _read_log(self, task_id: str, runs: list[tuple[int, int]]) -> list[str]:
        """The JSON of the logged messages in `runs`, in order (under the lock)."""
        rows: list[str] = []
        for start, end in runs:
            rows += [
                unpack(data)
                for (data,) in self._db.execute(
                    "SELECT data FROM prompt_log WHERE task_id = ? AND idx >= ? AND idx < ? "
                    "ORDER BY idx",
                    (task_id, start, end),
                )
            ]
        return rows

    def load_task(self, task_id: str) -> TaskState | None:
        """The stored task, rebuilt from its rows (one consistent read)."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                row = self._db.execute(
                    "SELECT input, task, extra_state, version FROM tasks WHERE task_id = ?",
                    (task_id,),
                ).fetchone()
                if row is None:
                    return None
                with paused_gc():
                    return self._assemble(task_id, row)
            except (sqlite3.Error, ValueError, KeyError, TypeError, RecursionError) as exc:
                # A damaged row (bad bytes, bad JSON, an unknown status): say which task, and
                # leave the others usable. pydantic's ValidationError is a ValueError.
                raise StoreError(
                    f"task {task_id} is damaged in {self.path} and cannot be read "
                    f"({type(exc).__name__}: {str(exc)[:300]})",
                    hint="delete_task() still removes it; the other tasks are not affected",
                    task_id=task_id,
                ) from exc
            finally:
                self._db.execute("COMMIT")

    def _assemble(self, task_id: str, row: tuple[Any, ...]) -> TaskState:
        """The task from its `tasks` row and the rows of its steps and messages."""
        rows = self._read_steps(task_id)
        return assemble_state(
            task_input=row[0],
            task_json=row[1],
            extra_state_json=row[2],
            version=row[3],
            messages=self._read_messages(task_id),
            steps=[TaskStep.model_validate_json(data) for _, data, _, _ in rows],
            outputs=[(sid, output) for sid, _, output, _ in rows if output],
            snapshots=[(sid, snapshot) for sid, _, _, snapshot in rows if snapshot],
            unpack=unpack,
        )

    def task_version(self, task_id: str) -> int | None:
        """The task's current version, or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT version FROM tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
        return row[0] if row else None

    def list_tasks(self) -> list[TaskSummary]:
        """Every task, newest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT task_id, input, status, created_at, updated_at, steps_completed, "
                "steps_upcoming, usage, "
                "CASE WHEN json_valid(task) THEN COALESCE(json_extract(task, '$.imported'), 0) "
                "ELSE 0 END, "
                "CASE WHEN json_valid(task) THEN json_extract(task, '$.thread_id') END "
                "FROM tasks ORDER BY created_at DESC, rowid DESC"
            ).fetchall()
        return [_summary(row) for row in rows]

    def delete_task(self, task_id: str) -> bool:
        """Remove a task and all its rows; False when there was none."""
        with self._transaction() as db:
            deleted = db.execute("DELETE FROM tasks WHERE task_id = ?", (task_id,)).rowcount
            db.execute("DELETE FROM steps WHERE task_id = ?", (task_id,))
            db.execute("DELETE FROM prompts WHERE task_id = ?", (task_id,))
            db.execute("DELETE FROM prompt_log WHERE task_id = ?", (task_id,))
            db.execute("DELETE FROM messages WHERE owner = ?", (task_id,))
        self._prompt_logs.drop(task_id)
        return deleted > 0

    def load_conversation(self, conversation_id: str) -> list[ChatMessage]:
        """The shared conversation's messages."""
        with self._lock:
            return self._read_messages(_CONVERSATION_PREFIX + conversation_id)

    def write_conversation(self, conversation_id: str, write: MemoryWrite) -> None:
        """Apply `write` to the shared conversation, in one transaction."""
        with self._transaction() as db:
            self._write_messages(db, _CONVERSATION_PREFIX + conversation_id, write)

    def get_setting(self, name: str) -> Any | None:
        """The JSON value saved under `name`, or None when there is none."""
        with self._lock:
            row = self._db.execute("SELECT value FROM settings WHERE name = ?", (name,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put_setting(self, name: str, value: Any) -> None:
        """Save `value` (plain JSON data) under `name`, in one transaction; None removes it."""
        data = None if value is None else setting_record(name, value)
        with self._transaction() as db:
            try:
                if data is None:
                    db.execute("DELETE FROM settings WHERE name = ?", (name,))
                else:
                    db.execute(
                        "INSERT INTO settings (name, value) VALUES (?, ?) "
                        "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                        (name, data),
                    )
            except sqlite3.Error as exc:
                raise StoreError(f"cannot save the setting {name!r} to {self.path}: {exc}") from exc

    # -- the task ledger (agent_core.store.ledger)

    @staticmethod
    def _write_ledger_entry(db: sqlite3.Connection, key: str, task_id: str) -> None:
        """Record `key` -> `task_id` in the transaction that creates the task."""
        try:
            db.execute(
                "INSERT INTO task_ledger (key, task_id, created_at) VALUES (?, ?, ?)",
                (key, task_id, utcnow().isoformat()),
            )
        except sqlite3.IntegrityError:
            raise _ledger_conflict(db, key, task_id) from None

    def ledger_entry(self, key: str) -> LedgerEntry | None:
        """The entry recorded under `key`, or None when there is none."""
        with self._lock:
            row = self._db.execute(
                "SELECT key, task_id, created_at, result, finished_at FROM task_ledger "
                "WHERE key = ?",
                (key,),
            ).fetchone()
        return None if row is None else _ledger_entry(row)

    def finish_ledger_entry(self, key: str, result: str) -> None:
        """Record the result of the task under `key`, in one transaction."""
        with self._transaction() as db:
            try:
                db.execute(
                    "UPDATE task_ledger SET result = ?, finished_at = ? WHERE key = ?",
                    (result, utcnow().isoformat(), key),
                )
            except sqlite3.Error as exc:
                message = _cannot(f"record ledger entry {key!r} in", self.path, exc)
                raise StoreError(message) from exc

    def trim_ledger(self, *, finished_before: datetime, keep_at_most: int) -> int:
        """Drop the entries finished before `finished_before`, then the oldest past a count."""
        with self._transaction() as db:
            try:
                finished = db.execute(
                    "DELETE FROM task_ledger WHERE finished_at < ?", (finished_before.isoformat(),)
                ).rowcount
                over = db.execute(
                    "DELETE FROM task_ledger WHERE key IN (SELECT key FROM task_ledger "
                    "ORDER BY created_at DESC, key LIMIT -1 OFFSET ?)",
                    (max(keep_at_most, 0),),
                ).rowcount
            except sqlite3.Error as exc:
                raise StoreError(_cannot("trim the task ledger in", self.path, exc)) from exc
        return finished + over

    def now(self) -> float:
        """This machine's clock: the processes sharing a SQLite file share its machine too."""
        return time.time()

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"


_DISK_TROUBLE = ("disk is full", "disk i/o error", "file too large")


def _cannot(what: str, path: str, exc: sqlite3.Error) -> str:
    """Why a write failed, saying so plainly when the disk is full (nothing was written)."""
    if any(trouble in str(exc).lower() for trouble in _DISK_TROUBLE):
        return (
            f"cannot {what} {path}: the disk is full or refused the write ({exc}); nothing "
            "of this change was written and what was stored before is intact. Free some "
            "space and try again"
        )
    return f"cannot {what} {path}: {exc}"


def _ledger_conflict(db: sqlite3.Connection, key: str, task_id: str) -> ConflictError:
    row = db.execute("SELECT task_id FROM task_ledger WHERE key = ?", (key,)).fetchone()
    held = row[0] if row else "another task"
    return ConflictError(
        f"the ledger key {key!r} already names task {held}, so task {task_id} was not "
        "created; read the entry (ledger_entry) and carry on with that task",
        task_id=held if row else "",
    )


def _ledger_entry(row: tuple[Any, ...]) -> LedgerEntry:
    return LedgerEntry(
        key=row[0],
        task_id=row[1],
        created_at=datetime.fromisoformat(row[2]),
        result=row[3],
        finished_at=None if row[4] is None else datetime.fromisoformat(row[4]),
    )


def _summary(row: tuple[Any, ...]) -> TaskSummary:
    """A task's list line, also for a damaged row.

    A damaged row is listed as failed, saying why, so that the task can be found and deleted
    and the others are listed.
    """
    # Plain validation: pydantic-core's checks cost less than `model_construct`'s Python
    # path (4 vs 12 µs a row here).
    try:
        return TaskSummary(
            task_id=row[0],
            input=row[1],
            status=TaskStatus(row[2]),
            created_at=datetime.fromisoformat(row[3]),
            updated_at=datetime.fromisoformat(row[4]),
            steps_completed=row[5],
            steps_upcoming=row[6],
            usage=Usage.model_validate_json(row[7]),
            imported=bool(row[8]),
            thread_id=row[9] or row[0],  # Stored before threads: a thread of its own.
        )
    except (ValueError, TypeError) as exc:
        return damaged_summary(row[0], row[1], exc)
