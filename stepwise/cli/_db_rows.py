"""The names a store keeps that the `Store` protocol cannot list: settings, ledger, conversations.

The protocol reads each of them by name (`get_setting`, `ledger_entry`, `load_conversation`)
and lists only tasks, so `stepwise db copy` asks the database itself for the names, read only,
from the stores' documented tables; the values are then read through the protocol. A store
method that lists them would replace this module.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_core.errors import StoreError, UserError
from agent_core.store import SQLiteStore

__all__ = ["CONVERSATION_PREFIX", "Names", "names_in"]

CONVERSATION_PREFIX = "conversation:"
"""How both stores tell a conversation's messages from a task's (their `owner` column)."""

_QUERIES = (
    "SELECT name FROM {s}settings ORDER BY name",
    "SELECT key FROM {s}task_ledger ORDER BY created_at, key",
    f"SELECT DISTINCT owner FROM {{s}}messages WHERE owner LIKE '{CONVERSATION_PREFIX}%' "
    "ORDER BY owner",
)


@dataclass(slots=True)
class Names:
    """What a store holds beside its tasks, by name."""

    settings: list[str] = field(default_factory=list)
    ledger_keys: list[str] = field(default_factory=list)
    conversations: list[str] = field(default_factory=list)


def names_in(store: Any) -> Names:
    """The setting names, ledger keys and conversation ids `store` holds.

    Raises:
        UserError: The store is of a kind this command cannot list (not SQLite or PostgreSQL).
        StoreError: The database cannot be read.
    """
    if isinstance(store, SQLiteStore):
        rows = _sqlite_rows(Path(store.path))
    elif type(store).__name__ == "PostgresStore":  # Not imported: psycopg is an extra.
        rows = _postgres_rows(store.url, store.schema)
    else:
        raise UserError(f"cannot list the settings and ledger of {store!r}")
    settings, keys, owners = rows
    return Names(settings, keys, [owner.removeprefix(CONVERSATION_PREFIX) for owner in owners])


def _sqlite_rows(path: Path) -> list[list[str]]:
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True)
        try:
            return [[row[0] for row in db.execute(q.format(s=""))] for q in _QUERIES]
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot list the settings and ledger of {path}: {exc}") from exc


def _postgres_rows(url: str, schema: str) -> list[list[str]]:
    import psycopg

    from agent_core.store.postgres import masked_url

    try:
        with psycopg.connect(url, connect_timeout=10) as conn:
            prefix = f'"{schema}".'  # A plain SQL name: PostgresStore checked it.
            return [[row[0] for row in conn.execute(q.format(s=prefix))] for q in _QUERIES]
    except psycopg.Error as exc:
        where = f"{masked_url(url)} (schema {schema})"
        raise StoreError(f"cannot list the settings and ledger of {where}: {exc}") from exc
