"""Where tasks live: `SQLiteStore` (durable, the app's default), `InMemoryStore`, `PostgresStore`.

`PostgresStore` is a team's shared database (the `postgres` extra), loaded when first named.
All three keep an app's settings too (`SettingsStore`), apart from the task `Store` protocol, and a
task ledger (`TaskLedger`: which task an outside request started).
"""

from typing import TYPE_CHECKING, Any

from agent_core.store.base import MemoryWrite, SettingsStore, Store, TaskChange, TaskSummary
from agent_core.store.ledger import LedgerEntry, TaskLedger
from agent_core.store.memory import InMemoryStore
from agent_core.store.sqlite import SQLiteStore

if TYPE_CHECKING:  # Loaded on first use (below): psycopg is an extra.
    from agent_core.store.open import open_store
    from agent_core.store.postgres import PostgresStore

__all__ = [
    "InMemoryStore",
    "LedgerEntry",
    "MemoryWrite",
    "PostgresStore",
    "SQLiteStore",
    "SettingsStore",
    "Store",
    "TaskChange",
    "TaskLedger",
    "TaskSummary",
    "open_store",
]


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":  # Its module and psycopg load only for those who use it.
        from agent_core.store.postgres import PostgresStore

        return PostgresStore
    if name == "open_store":  # Loaded like PostgresStore, which it may open.
        from agent_core.store.open import open_store

        return open_store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
