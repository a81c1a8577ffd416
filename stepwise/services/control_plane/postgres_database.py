"""`PostgresDatabase`: the control plane's state in PostgreSQL, shared by several control planes.

Control planes in several processes (or machines) on one database and one queue handle one
system: Redis gives each message to one of them, and the per-task lock is a transaction-scoped
advisory lock in the database (`pg_try_advisory_xact_lock`, keyed on the task id), held on a
connection of its own while a handler changes the task. The handler's writes are short
transactions of their own, committed as they go (a hop is stored before it is sent), so the
lock never waits on them; a control plane that dies holding a lock loses its connection, and
PostgreSQL releases the lock with it.

The tables live in their own schema (`?schema=` in the URL, default "stepwise_services"),
apart from a `PostgresStore`'s. psycopg 3 is loaded only here: `pip install "stepwise[postgres]"`.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from agent_core.errors import StoreError, UserError
from agent_core.extras import require
from agent_core.host import split_schema
from agent_core.store.pg_pool import ConnectionPool
from agent_core.store.postgres import masked_url

__all__ = ["DEFAULT_SCHEMA", "PostgresDatabase"]

DEFAULT_SCHEMA = "stepwise_services"
"""The schema of the control plane's tables unless the URL's `schema=` names another."""

_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_STATEMENTS = 8  # Connections for reads and writes (each a short transaction).
_LOCKS = 32  # Tasks one control plane changes at once: its consumer, hop watch and API calls.
_FIRST_WAIT, _LONGEST_WAIT = 0.005, 0.1  # Seconds between tries of a task lock another holds.


def _psycopg() -> Any:
    require("postgres", feature="the control plane on PostgreSQL")
    import psycopg

    return psycopg


def _lock_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key (Python's hash() changes per process)."""
    return int.from_bytes(
        hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True
    )


class _Transaction:
    """Runs the state's `?`-placeholder SQL on a psycopg connection."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(sql.replace("?", "%s"), tuple(params))


class PostgresDatabase:
    """A PostgreSQL database (a `postgresql://` URL); safe to share between threads."""

    def __init__(self, url: str, schema_sql: str, *, timeout: float = 10.0) -> None:
        self._pg = _psycopg()
        self.url, self.schema = _take_schema(url)
        self.where = f"{masked_url(self.url)} (schema {self.schema})"
        self._timeout = timeout
        self._pool = self._new_pool(_STATEMENTS)
        self._lock_pool = self._new_pool(_LOCKS)
        self._local_locks: dict[str, asyncio.Lock] = {}
        # Waited for in the event loop, so the pool's own (blocking) wait never stalls it.
        self._lock_slots = asyncio.Semaphore(_LOCKS)
        self._create(schema_sql)

    def _new_pool(self, size: int) -> ConnectionPool:
        return ConnectionPool(self._connect, max_size=size, timeout=self._timeout, where=self.where)

    def _connect(self) -> Any:
        try:
            conn = self._pg.connect(
                self.url, autocommit=True, connect_timeout=max(int(self._timeout), 1)
            )
            conn.execute(f'SET search_path TO "{self.schema}"')
            return conn
        except self._pg.Error as exc:
            raise StoreError(
                f"the control plane cannot connect to its database {self.where}: {exc}",
                hint="check the URL, that the server runs and accepts this user",
            ) from exc

    def _create(self, schema_sql: str) -> None:
        """The schema and tables, made by one control plane at a time (several start at once)."""
        with self.transaction() as tx:
            tx.execute("SELECT pg_advisory_xact_lock(?)", (_lock_key(f"schema:{self.schema}"),))
            tx.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            for statement in filter(str.strip, schema_sql.split(";")):
                tx.execute(re.sub(r"\bREAL\b", "DOUBLE PRECISION", statement))

    def close(self) -> None:
        """Close the connections."""
        self._pool.close()
        self._lock_pool.close()

    @contextmanager
    def transaction(self) -> Iterator[_Transaction]:
        """One transaction on a pooled connection; a database failure is a `StoreError`."""
        with self._pool.connection() as conn, self._failures("write to"):
            with conn.transaction():
                yield _Transaction(conn)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read."""
        with self._pool.connection() as conn, self._failures("read"):
            return _Transaction(conn).execute(sql, params).fetchall()

    def ensure_column(self, table: str, column: str, declaration: str) -> None:
        """Add `column` to `table` unless it has it (ALTER locks the table: only when needed)."""
        found = self.rows(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
            "AND column_name = ?",
            (self.schema, table, column),
        )
        if found:
            return
        with self.transaction() as tx:
            declaration = re.sub(r"\bREAL\b", "DOUBLE PRECISION", declaration)
            tx.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {declaration}")

    @asynccontextmanager
    async def task_lock(self, task_id: str) -> AsyncIterator[None]:
        """The task's advisory lock, held in an open transaction until the block ends.

        This process's own handlers queue on an `asyncio.Lock` first, so a connection is
        taken only by the one whose turn it is; another control plane's hold is waited out
        by trying again, with backoff, without blocking the event loop.
        """
        async with self._local_locks.setdefault(task_id, asyncio.Lock()), self._lock_slots:
            with self._lock_pool.connection() as conn, self._failures("lock a task in"):
                with conn.transaction():
                    await self._acquire(conn, _lock_key(f"task:{self.schema}:{task_id}"))
                    yield

    async def _acquire(self, conn: Any, key: int) -> None:
        wait = _FIRST_WAIT
        while not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,)).fetchone()[0]:
            await asyncio.sleep(wait)
            wait = min(wait * 2, _LONGEST_WAIT)

    @contextmanager
    def _failures(self, what: str) -> Iterator[None]:
        try:
            yield
        except self._pg.Error as exc:
            raise StoreError(f"the control plane could not {what} {self.where}: {exc}") from exc


def _take_schema(url: str) -> tuple[str, str]:
    """The URL without its `schema=` parameter, and that schema, which must be a plain name."""
    url, schema = split_schema(url, default=DEFAULT_SCHEMA)
    if not _SCHEMA_NAME.fullmatch(schema):
        raise UserError(
            f"the control plane's database URL has schema={schema!r}: a schema must be a plain "
            "SQL name (letters, digits, _; at most 63)"
        )
    return url, schema
