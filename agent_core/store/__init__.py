"""Where tasks live: `SQLiteStore` (durable, the app's default) and `InMemoryStore`.

Both keep an app's settings too (`SettingsStore`), apart from the task `Store` protocol, and a
task ledger (`TaskLedger`: which task an outside request started).
"""

from agent_core.store.base import MemoryWrite, SettingsStore, Store, TaskChange, TaskSummary
from agent_core.store.ledger import LedgerEntry, TaskLedger
from agent_core.store.memory import InMemoryStore
from agent_core.store.sqlite import SQLiteStore

__all__ = [
    "InMemoryStore",
    "LedgerEntry",
    "MemoryWrite",
    "SQLiteStore",
    "SettingsStore",
    "Store",
    "TaskChange",
    "TaskLedger",
    "TaskSummary",
]
