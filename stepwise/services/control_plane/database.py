"""The control plane's database: SQLite for one control plane, PostgreSQL for several.

`ControlPlaneState` writes one SQL for both (`?` placeholders; upserts as `ON CONFLICT`, which
both speak) through a `Database`: short transactions, reads, and the per-task lock that keeps
two handlers off one task. On SQLite the lock is an `asyncio.Lock` in this process, so a SQLite
file serves one control plane; on PostgreSQL it is an advisory lock in the database, so control
planes in several processes and machines on one database and one queue handle one system.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

__all__ = ["Cursor", "Database", "Transaction", "is_database_url", "open_database"]

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class Cursor(Protocol):
    """What a statement returns: its rows and how many rows it changed."""

    rowcount: int

    def fetchone(self) -> Any:
        """The next row, or None."""
        ...

    def fetchall(self) -> list[Any]:
        """The rows left."""
        ...


class Transaction(Protocol):
    """Statements inside one transaction."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement (`?` placeholders)."""
        ...


class Database(Protocol):
    """One SQL database the control plane keeps its state in."""

    where: str
    """The database to name in logs and messages (no password)."""

    def transaction(self) -> AbstractContextManager[Transaction]:
        """One transaction: committed when the block ends, rolled back when it raises."""
        ...

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read."""
        ...

    def ensure_column(self, table: str, column: str, declaration: str) -> None:
        """Add a column a file written by an older version lacks."""
        ...

    def task_lock(self, task_id: str) -> AbstractAsyncContextManager[None]:
        """Held while one handler changes a task: no other handler, here or elsewhere, does."""
        ...

    def close(self) -> None:
        """Release the connections."""
        ...


def is_database_url(db: str | Path) -> bool:
    """Whether `db` names a PostgreSQL database (a URL) rather than a SQLite file."""
    return isinstance(db, str) and db.lower().startswith(_POSTGRES_SCHEMES)


def open_database(db: str | Path, schema_sql: str) -> Database:
    """The database `db` names, with the tables of `schema_sql` created when missing.

    Args:
        db: A `postgresql://` URL (`?schema=` picks the schema, default "stepwise_services"),
            or a SQLite file's path, or ":memory:".
        schema_sql: `CREATE ... IF NOT EXISTS` statements, `;`-separated.
    """
    if is_database_url(db):
        from stepwise.services.control_plane.postgres_database import PostgresDatabase

        return PostgresDatabase(str(db), schema_sql)
    from stepwise.services.control_plane.sqlite_database import SQLiteDatabase

    return SQLiteDatabase(str(db), schema_sql)
