"""Where tasks live: `SQLiteStore` (durable, the app's default) and `InMemoryStore`.

Both keep an app's settings too (`SettingsStore`), apart from the task `Store` protocol.
"""

from agent_core.store.base import MemoryWrite, SettingsStore, Store, TaskChange, TaskSummary
from agent_core.store.memory import InMemoryStore
from agent_core.store.sqlite import SQLiteStore

__all__ = [
    "InMemoryStore",
    "MemoryWrite",
    "SQLiteStore",
    "SettingsStore",
    "Store",
    "TaskChange",
    "TaskSummary",
]
