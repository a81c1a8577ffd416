"""`PostgresStore`: tasks in a PostgreSQL database, for a team's several processes and machines.

The same records as `SQLiteStore` (JSON text, written by `_records`), in tables of their own
schema (`stepwise` unless told), so a shared database is not cluttered. Each `commit` is one
transaction that first locks the task's row, then compare-and-updates its version: the lock
orders concurrent commits of one task (whatever version each was made against, so none
deadlocks another), and the later one finds the version moved on and gets `ConflictError`
(`task_changed`), exactly as on SQLite. Claims are the steps' `claimed_by`
stamps, as on SQLite: the runtime decides when one is stale.

psycopg 3 is imported when a store is made: `pip install "stepwise[postgres]"`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from agent_core.errors import ConflictError, StoreError, StoreUnavailableError
from agent_core.extras import require
from agent_core.llms.base import ChatMessage, Usage
from agent_core.store._pg_sql import LAYOUT_VERSION, TABLES, Statements
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
    setting_record,
    task_record,
)
from agent_core.store.base import MemoryWrite, PromptCopy, TaskChange, TaskSummary
from agent_core.store.ledger import LedgerEntry
from agent_core.store.listeners import CommitListener, CommitListeners
from agent_core.store.pg_pool import ConnectionPool
from agent_core.types import TaskState, TaskStatus, TaskStep, utcnow

__all__ = ["PostgresStore", "masked_url"]

_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")

# Conversations share the messages table with tasks, as on SQLite.
_CONVERSATION_PREFIX = "conversation:"

_RACES = ("40001", "40P01")
"""SQLSTATEs of a lost race: a serialization failure, a deadlock the server broke."""

_DISK_FULL = "53"
"""SQLSTATE class 53: insufficient resources (a full disk, out of memory)."""


def _psycopg() -> Any:
    require("postgres", feature="PostgresStore")
    import psycopg

    return psycopg


def _lock_key(name: str) -> int:
    """A stable 64-bit advisory-lock key for `name` (Python's hash() changes per process)."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def masked_url(url: str) -> str:
    """The URL (or libpq key=value string) without its password: for messages, repr and logs."""
    url = re.sub(r"://([^:/@]*):[^@/]*@", r"://\1:***@", url)
    return re.sub(r"(password\s*=\s*)('[^']*'|\S+)", r"\1***", url)


class PostgresStore:
    """Tasks in a PostgreSQL database; safe to share between threads, processes and machines.

    Args:
        url: The database, as libpq takes it (`postgresql://user:pass@host:5432/db`).
        schema: The schema the store's tables live in; created on first use, with its tables
            (under an advisory lock, so processes starting together do not race).
        max_connections: The most connections this store opens at once (its pool's size).
        timeout: Seconds to wait to connect, or for a free connection.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str = "stepwise",
        max_connections: int = 8,
        timeout: float = 10.0,
    ) -> None:
        self._pg = _psycopg()
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(
                f"schema must be a plain SQL name (letters, digits, _; at most 63), not {schema!r}"
            )
        self.url = url
        self.schema = schema
        self.where = f"{masked_url(url)} (schema {schema})"
        self._sql = Statements.in_schema(schema)
        self._listeners = CommitListeners()
        self._prompt_logs = PromptLogs()
        self._timeout = timeout
        self._pool = ConnectionPool(
            self._connect, max_size=max_connections, timeout=timeout, where=self.where
        )
        self._create_schema()

    def _connect(self) -> Any:
        try:
            conn = self._pg.connect(
                self.url, autocommit=True, connect_timeout=max(int(self._timeout), 1)
            )
            # Timestamps come back in UTC, as the runtime writes them (utcnow()). Set here,
            # not in the connection's options, which would replace any the URL gives.
            conn.execute("SET TIME ZONE 'UTC'")
            return conn
        except self._pg.OperationalError as exc:
            raise self._unavailable(exc) from exc
        except self._pg.Error as exc:
            raise StoreError(
                f"cannot connect to the PostgreSQL store at {masked_url(self.url)}: {exc}",
                hint="check the URL, that the server runs and accepts this user",
            ) from exc

    def _unavailable(self, exc: Exception) -> StoreUnavailableError:
        """The server is down, unreachable or refusing us: said plainly, the driver's text apart.

        The driver's first line goes in `params` (a password never appears in it: libpq names
        the host and port); the message is the same whatever the cause, for faces to word.
        """
        where = masked_url(self.url)
        detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        return StoreUnavailableError(
            f"the database at {where} does not answer: start it, or open another database",
            hint="check that the server runs and accepts this user, then try again",
            params={"where": where, "detail": masked_url(detail)},
        )

    def _create_schema(self) -> None:
        """Create the schema and its tables, unless they are there (one process at a time)."""
        try:
            with self._pool.connection() as conn:
                if self._layout(conn) >= LAYOUT_VERSION:
                    return
                with conn.transaction():
                    conn.execute(
                        "SELECT pg_advisory_xact_lock(%s)", (_lock_key(f"stepwise:{self.schema}"),)
                    )
                    found = conn.execute(
                        "SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)
                    ).fetchone()
                    if found is None:  # IF NOT EXISTS still needs the right to create one.
                        conn.execute(f'CREATE SCHEMA "{self.schema}"')
                    tables = ";\n".join(TABLES).replace("{s}", f'"{self.schema}"')
                    conn.execute(tables)  # One round trip (no parameters: one query string).
                    conn.execute(self._sql.set_layout, (LAYOUT_VERSION,))
        except self._pg.Error as exc:
            raise StoreError(f"cannot create the store's tables in {self.where}: {exc}") from exc

    def _layout(self, conn: Any) -> int:
        table = f'"{self.schema}".layout'
        (found,) = conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()
        if found is None:
            return 0
        row = conn.execute(f"SELECT max(version) FROM {table}").fetchone()
        return row[0] or 0

    @contextmanager
    def _transaction(self, what: str, task_id: str = "") -> Iterator[Any]:
        """A pooled connection in one transaction; a database failure is a `StoreError`."""
        with self._pool.connection() as conn:
            try:
                with conn.transaction():
                    yield conn
            except self._pg.Error as exc:
                if _is_race(exc):
                    raise _lost_race(what, self.where, task_id) from None
                if _gone(conn):
                    raise self._unavailable(exc) from exc
                raise StoreError(_cannot(what, self.where, exc), task_id=task_id) from exc

    @contextmanager
    def _reading(self, what: str) -> Iterator[Any]:
        with self._pool.connection() as conn:
            try:
                yield conn
            except self._pg.Error as exc:
                if _gone(conn):
                    raise self._unavailable(exc) from exc
                raise StoreError(f"cannot read {what} from {self.where}: {exc}") from exc

    # -- tasks

    def commit(self, change: TaskChange) -> None:
        """Write `change` in one transaction, if the task is still at `change.base_version`.

        Every statement is sent at once (libpq's pipeline): one round trip to the server for
        the whole change instead of one per statement. The version check's count is read
        before COMMIT, so a moved-on task rolls everything back.
        """
        task_id = change.state.task_id
        try:
            self._commit(change)
        except BaseException:
            self._prompt_logs.drop(task_id)  # It may hold what was rolled back.
            raise
        self._listeners.tell(change.state)

    def _commit(self, change: TaskChange) -> None:
        task_id = change.state.task_id
        with self._pool.connection() as conn:
            try:
                with conn.pipeline() as pipeline, conn.transaction():
                    if change.base_version is not None:
                        conn.execute(self._sql.lock_task, (task_id,))
                    checks = self._write_task_row(conn, change)
                    self._write_rows(conn, change)
                    entry = None
                    if change.ledger_key is not None:
                        entry = self._write_ledger_entry(conn, change.ledger_key, task_id)
                    pipeline.sync()
                    if any(cursor.rowcount != 1 for cursor in checks):
                        raise self._conflict(conn, task_id, change.base_version)
                    if entry is not None and entry.rowcount != 1:
                        raise self._ledger_conflict(conn, change.ledger_key or "", task_id)
            except self._pg.IntegrityError:  # A row another runner wrote first, as on SQLite.
                raise self._conflict(conn, task_id, change.base_version) from None
            except self._pg.Error as exc:
                if _is_race(exc):  # The lock order rules deadlocks out; kept as a conflict.
                    raise self._conflict(conn, task_id, change.base_version) from None
                if _gone(conn):
                    raise self._unavailable(exc) from exc
                what = f"write task {task_id} to"
                raise StoreError(_cannot(what, self.where, exc), task_id=task_id) from exc

    def add_commit_listener(self, listener: CommitListener) -> Callable[[], None]:
        """Hear each commit of this store object (see `Store.add_commit_listener`)."""
        return self._listeners.add(listener)

    def _conflict(self, conn: Any, task_id: str, expected: int | None) -> ConflictError:
        try:
            row = conn.execute(self._sql.task_version, (task_id,)).fetchone()
        except self._pg.Error:  # The conflict is the news; its version is a detail.
            row = None
        version = row[0] if row else None
        return ConflictError(
            f"task {task_id} was changed by another runner (version "
            f"{version}, expected {expected}); reload it and try again",
            task_id=task_id,
            code="task_changed",
            params={"version": version, "expected": expected},
        )

    def _write_task_row(self, conn: Any, change: TaskChange) -> list[Any]:
        """Insert or compare-and-update the task row.

        Returns the cursors that must each have touched one row: fewer means the task's
        version moved on (or, creating it, that it exists).
        """
        state, task = change.state, change.state.task
        base = change.base_version
        checks = []
        if base is None:
            created = (task.task_id, state.version, task.created_at, _text(task.input))
            checks.append(conn.execute(self._sql.create_task, (*created, task.updated_at)))
            base = state.version
        elif not change.task_row:  # Only the version moves (a step was claimed).
            return [conn.execute(self._sql.move_version, (state.version, task.task_id, base))]
        cursor = conn.execute(
            self._sql.update_task,
            (
                state.version,
                task.status.value,
                task.updated_at,
                len(state.completed),
                len(state.queue),
                task.usage.model_dump_json(),
                task.imported,
                task.thread_id,
                task_record(state),
                state.extra_state_json,
                task.task_id,
                base,
            ),
        )
        return [*checks, cursor]

    def _write_rows(self, conn: Any, change: TaskChange) -> None:
        task_id = change.state.task_id
        outputs = {o.task_step.step_id: output_record(o) for o in change.outputs}
        outputs.update(change.stored_outputs)  # As this store wrote them.
        snapshots = {s.step_id: s.model_dump_json() for s in change.snapshots}
        snapshots.update(change.stored_snapshots)
        snapshots.update((step_id, "") for step_id in change.dropped_snapshots)
        cursor = conn.cursor()
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
            cursor.executemany(self._sql.upsert_step, rows)
        written = {s.step_id for s in change.steps}
        for statement, values in (
            (self._sql.set_output, outputs),
            (self._sql.set_snapshot, snapshots),
        ):
            rest = [
                (value or None, task_id, step_id)
                for step_id, value in values.items()
                if step_id not in written
            ]
            if rest:
                cursor.executemany(statement, rest)
        self._write_prompts(conn, task_id, change)
        if change.dropped_steps:
            dropped = [(task_id, i) for i in change.dropped_steps]
            cursor.executemany(self._sql.drop_step, dropped)
            cursor.executemany(self._sql.drop_prompt, dropped)
        if change.memory is not None:
            self._write_messages(cursor, task_id, change.memory)

    def _write_prompts(self, conn: Any, task_id: str, change: TaskChange) -> None:
        """Each sent prompt as runs into the task's log, and the messages the log gains."""
        if change.prompts_from is not None:
            self._copy_prompts(conn, task_id, change.prompts_from)
        if not any(o.messages_sent for o in change.outputs):
            return
        prompts, appended = encode_prompts(self._prompt_log(conn, task_id), change.outputs)
        cursor = conn.cursor()
        if appended:
            rows = [(task_id, idx, data) for idx, data in appended]
            cursor.executemany(self._sql.append_prompt_log, rows)
        rows = [(task_id, step_id, record) for step_id, record in prompts]
        cursor.executemany(self._sql.upsert_prompt, rows)

    def _copy_prompts(self, conn: Any, task_id: str, source: PromptCopy) -> None:
        """A new fork's prompt rows: the original's, and the prefix of its log they name."""
        rows = conn.execute(self._sql.read_prompts, (source.task_id,)).fetchall()
        prompts, log_end = copied_prompts(rows, source.steps)
        cursor = conn.cursor()
        cursor.execute(self._sql.copy_prompt_log, (task_id, source.task_id, log_end))
        if prompts:
            rows = [(task_id, step_id, record) for step_id, record in prompts]
            cursor.executemany(self._sql.upsert_prompt, rows)

    def _prompt_log(self, conn: Any, task_id: str) -> PromptLog:
        """The task's log as stored now (read inside the commit, after the task's row lock)."""
        (size,) = conn.execute(self._sql.prompt_log_size, (task_id,)).fetchone()
        log = self._prompt_logs.get(task_id)
        if log is None or len(log.messages) > size:
            log = PromptLog()
        if len(log.messages) < size:
            rows = conn.execute(
                self._sql.read_prompt_log, (task_id, len(log.messages), size)
            ).fetchall()
            log.extend(ChatMessage.model_validate_json(data) for (data,) in rows)
        self._prompt_logs.put(task_id, log)
        return log

    def _write_messages(self, cursor: Any, owner: str, write: MemoryWrite) -> None:
        if write.truncate:
            cursor.execute(self._sql.truncate_messages, (owner, write.keep))
        if write.append:
            cursor.executemany(
                self._sql.append_message,
                [
                    (owner, write.keep + i, message.model_dump_json())
                    for i, message in enumerate(write.append)
                ],
            )

    def load_task(self, task_id: str) -> TaskState | None:
        """The stored task, rebuilt from its rows (one statement: one consistent read)."""
        with self._reading(f"task {task_id}") as conn:
            row = conn.execute(self._sql.load_task, (task_id,)).fetchone()
        if row is None:
            return None
        try:
            return _assemble(row)
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            # A damaged row (bad JSON, an unknown status): say which task, and leave the
            # others usable. pydantic's ValidationError is a ValueError.
            raise StoreError(
                f"task {task_id} is damaged in {self.where} and cannot be read "
                f"({type(exc).__name__}: {str(exc)[:300]})",
                hint="delete_task() still removes it; the other tasks are not affected",
                task_id=task_id,
            ) from exc

    def load_messages_sent(self, task_id: str, step_id: str) -> list[ChatMessage]:
        """The messages the step sent to its model ([] when none are stored)."""
        with self._reading(f"the prompt of step {step_id}") as conn:
            row = conn.execute(self._sql.load_prompt, (task_id, step_id)).fetchone()
            if row is None:
                return []
            return decode_prompt(row[0], lambda runs: self._read_log(conn, task_id, runs))

    def _read_log(self, conn: Any, task_id: str, runs: list[tuple[int, int]]) -> list[str]:
        """The JSON of the logged messages in `runs`, in order."""
        rows: list[str] = []
        for start, end in runs:
            cursor = conn.execute(self._sql.read_prompt_log, (task_id, start, end))
            rows += [data for (data,) in cursor]
        return rows

    def task_version(self, task_id: str) -> int | None:
        """The task's current version, or None."""
        with self._reading(f"task {task_id}") as conn:
            row = conn.execute(self._sql.task_version, (task_id,)).fetchone()
        return row[0] if row else None

    def list_tasks(self) -> list[TaskSummary]:
        """Every task, newest first."""
        with self._reading("the task list") as conn:
            rows = conn.execute(self._sql.list_tasks).fetchall()
        return [_summary(row) for row in rows]

    def delete_task(self, task_id: str) -> bool:
        """Remove a task and all its rows (one statement); False when there was none."""
        with self._transaction(f"delete task {task_id} from", task_id) as conn:
            conn.execute(self._sql.lock_task, (task_id,))  # The task row first, as commits.
            deleted = conn.execute(self._sql.delete_task, {"id": task_id}).rowcount
        self._prompt_logs.drop(task_id)
        return deleted > 0

    def load_conversation(self, conversation_id: str) -> list[ChatMessage]:
        """The shared conversation's messages."""
        with self._reading(f"conversation {conversation_id}") as conn:
            rows = conn.execute(
                self._sql.read_messages, (_CONVERSATION_PREFIX + conversation_id,)
            ).fetchall()
        return [ChatMessage.model_validate_json(data) for (data,) in rows]

    def write_conversation(self, conversation_id: str, write: MemoryWrite) -> None:
        """Apply `write` to the shared conversation, in one transaction.

        Writers of one conversation take turns (an advisory lock), as SQLite's write lock
        makes them: two appends at one index never collide.
        """
        owner = _CONVERSATION_PREFIX + conversation_id
        with self._transaction(f"write conversation {conversation_id} to") as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s)", (_lock_key(f"stepwise:{self.schema}:{owner}"),)
            )
            self._write_messages(conn.cursor(), owner, write)

    # -- settings (SettingsStore)

    def get_setting(self, name: str) -> Any | None:
        """The JSON value saved under `name`, or None when there is none."""
        with self._reading(f"the setting {name!r}") as conn:
            row = conn.execute(self._sql.get_setting, (name,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put_setting(self, name: str, value: Any) -> None:
        """Save `value` (plain JSON data) under `name`, in one transaction; None removes it."""
        data = None if value is None else setting_record(name, value)
        with self._transaction(f"save the setting {name!r} to") as conn:
            if data is None:
                conn.execute(self._sql.delete_setting, (name,))
            else:
                conn.execute(self._sql.put_setting, (name, data))

    # -- the task ledger (agent_core.store.ledger)

    def _write_ledger_entry(self, conn: Any, key: str, task_id: str) -> Any:
        """Record `key` -> `task_id` in the transaction that creates the task (its cursor)."""
        return conn.execute(self._sql.add_ledger_entry, (key, task_id, utcnow()))

    def _ledger_conflict(self, conn: Any, key: str, task_id: str) -> ConflictError:
        row = conn.execute(self._sql.ledger_holder, (key,)).fetchone()
        held = row[0] if row else "another task"
        return ConflictError(
            f"the ledger key {key!r} already names task {held}, so task {task_id} was not "
            "created; read the entry (ledger_entry) and carry on with that task",
            task_id=held if row else "",
        )

    def ledger_entry(self, key: str) -> LedgerEntry | None:
        """The entry recorded under `key`, or None when there is none."""
        with self._reading(f"ledger entry {key!r}") as conn:
            row = conn.execute(self._sql.ledger_entry, (key,)).fetchone()
        if row is None:
            return None
        key, task_id, created_at, result, finished_at = row
        result = None if result is None else json.loads(result)
        return LedgerEntry(key, task_id, created_at, result, finished_at)

    def finish_ledger_entry(self, key: str, result: str) -> None:
        """Record the result of the task under `key`, in one transaction."""
        with self._transaction(f"record ledger entry {key!r} in") as conn:
            conn.execute(self._sql.finish_ledger_entry, (_text(result), utcnow(), key))

    def trim_ledger(self, *, finished_before: datetime, keep_at_most: int) -> int:
        """Drop the entries finished before `finished_before`, then the oldest past a count."""
        with self._transaction("trim the task ledger in") as conn:
            finished = conn.execute(self._sql.trim_finished, (finished_before,)).rowcount
            over = conn.execute(self._sql.trim_oldest, (max(keep_at_most, 0),)).rowcount
        return finished + over

    def now(self) -> float:
        """The database server's clock (`StoreClock`): every machine on it reads the same."""
        with self._reading("the server's clock") as conn:
            (value,) = conn.execute("SELECT now()").fetchone()
        return float(value.timestamp())

    def close(self) -> None:
        """Close the store's connections."""
        self._pool.close()

    def __repr__(self) -> str:
        return f"PostgresStore({masked_url(self.url)!r}, schema={self.schema!r})"


def _text(value: str) -> str:
    """Free text (a task's input, a result) as a JSON string: PostgreSQL's text holds no NUL."""
    return json.dumps(value, ensure_ascii=False)


def _assemble(row: tuple[Any, ...]) -> TaskState:
    """The task from `Statements.load_task`'s row: its task row, messages and steps' arrays."""
    ids, data, outputs, snapshots = (value or [] for value in row[5:9])
    return assemble_state(
        task_input=json.loads(row[0]),
        task_json=row[1],
        extra_state_json=row[2],
        version=row[3],
        messages=[ChatMessage.model_validate_json(message) for message in row[4]],
        steps=[TaskStep.model_validate_json(step) for step in data],
        outputs=[(sid, output) for sid, output in zip(ids, outputs, strict=True) if output],
        snapshots=[(sid, snap) for sid, snap in zip(ids, snapshots, strict=True) if snap],
    )


def _gone(conn: Any) -> bool:
    """Whether the connection died under the call (the server stopped, the network dropped)."""
    return bool(conn.closed or conn.broken)


def _is_race(exc: Exception) -> bool:
    return getattr(exc, "sqlstate", None) in _RACES


def _lost_race(what: str, where: str, task_id: str) -> ConflictError:
    """A write another one beat (the server's own words, its lock names, stay in its log)."""
    return ConflictError(
        f"cannot {what} {where}: another writer changed the same rows at the same moment; "
        "nothing of this change was written. Reload and try again",
        task_id=task_id,
        code="task_changed",
    )


def _cannot(what: str, where: str, exc: Exception) -> str:
    """Why a write failed, saying so plainly when the server is out of space."""
    if (getattr(exc, "sqlstate", None) or "").startswith(_DISK_FULL):
        return (
            f"cannot {what} {where}: the database server is out of space or memory ({exc}); "
            "nothing of this change was written and what was stored before is intact. Free "
            "some space and try again"
        )
    return f"cannot {what} {where}: {exc}"


def _summary(row: tuple[Any, ...]) -> TaskSummary:
    """A task's list line, also for a damaged row (listed as failed, saying why)."""
    try:
        return TaskSummary(
            task_id=row[0],
            input=json.loads(row[1]),
            status=TaskStatus(row[2]),
            created_at=row[3],
            updated_at=row[4],
            steps_completed=row[5],
            steps_upcoming=row[6],
            usage=Usage.model_validate_json(row[7]),
            imported=row[8],
            thread_id=row[9] or row[0],
        )
    except (ValueError, TypeError) as exc:
        return damaged_summary(row[0], row[1], exc)
