"""`SQLiteDatabase`: the control plane's state in one SQLite file, for one control plane.

One connection and one thread lock, short `BEGIN IMMEDIATE` transactions; the per-task lock is
an `asyncio.Lock` in this process, which is why a SQLite file serves one control plane only
(point several at a PostgreSQL database instead).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any

__all__ = ["SQLiteDatabase"]


class SQLiteDatabase:
    """A SQLite file (or ":memory:"); safe to use from several threads."""

    def __init__(self, path: str, schema_sql: str) -> None:
        self.where = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._lock = threading.RLock()
        self._task_locks: dict[str, asyncio.Lock] = {}
        if path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(schema_sql)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One `BEGIN IMMEDIATE` transaction on the one connection."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                # SQLite has already rolled back a broken transaction (a full disk, say); a
                # failed rollback must never hide the error that made it necessary.
                if self._db.in_transaction:
                    with suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read."""
        with self._lock:
            return self._db.execute(sql, tuple(params)).fetchall()

    def ensure_column(self, table: str, column: str, declaration: str) -> None:
        """Add `column` to `table` unless it has it (SQLite has no ADD COLUMN IF NOT EXISTS)."""
        with self._lock:
            names = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            if column not in names:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")

    @asynccontextmanager
    async def task_lock(self, task_id: str) -> AsyncIterator[None]:
        """This process's lock of the task (the file has one control plane)."""
        async with self._task_locks.setdefault(task_id, asyncio.Lock()):
            yield
