"""Where tasks live: `SQLiteStore` (durable, the app's default) and `InMemoryStore`."""

from agent_core.store.base import MemoryWrite, Store, TaskChange, TaskSummary
from agent_core.store.memory import InMemoryStore
from agent_core.store.sqlite import SQLiteStore

__all__ = ["InMemoryStore", "MemoryWrite", "SQLiteStore", "Store", "TaskChange", "TaskSummary"]
