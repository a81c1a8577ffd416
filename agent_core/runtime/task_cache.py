"""The runner's cache of loaded tasks: the most recently used ones, at most `TASK_CACHE_SIZE`.

A runner kept every task it created, stepped or read, so a long-lived server grew by about
42 KB per 5-step task and never gave it back. The store holds every task: one evicted is
loaded again on its next use. A task in use is never evicted (`pinned`): a step runs on its
cached state, whose identity the step's claim and commit rely on.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

__all__ = ["TASK_CACHE_SIZE", "TaskCache"]

TASK_CACHE_SIZE = 256
"""Tasks one runner keeps loaded (a 5-step task takes about 42 KB)."""

_V = TypeVar("_V")


class TaskCache(OrderedDict[str, _V]):
    """An LRU dict, safe to share between threads.

    Reading or writing a task makes it the newest; past `size`, the oldest ones that
    `pinned(task_id, value)` does not hold go.
    """

    def __init__(self, pinned: Callable[[str, _V], bool], size: int = TASK_CACHE_SIZE) -> None:
        super().__init__()
        self.size = size
        self._pinned = pinned
        self._guard = threading.RLock()

    def get(self, key: str, default: _V | None = None) -> _V | None:  # type: ignore[override]
        """The task's value, now the newest; `default` when it is not cached."""
        with self._guard:
            if key not in self:
                return default
            self.move_to_end(key)
            return super().__getitem__(key)

    def pop(self, key: str, *default: _V | None) -> _V | None:  # type: ignore[override]
        """Drop the task (as `dict.pop`)."""
        with self._guard:
            return super().pop(key, *default)

    def __setitem__(self, key: str, value: _V) -> None:
        with self._guard:
            super().__setitem__(key, value)
            self.move_to_end(key)
            self._evict()

    def _evict(self) -> None:
        excess = len(self) - self.size
        if excess <= 0:
            return
        # Oldest first; pinned tasks stay (the cache may then hold more than `size` for a while).
        victims: list[str] = []
        for key, value in self.items():
            if len(victims) == excess:
                break
            if not self._pinned(key, value):
                victims.append(key)
        for key in victims:
            del self[key]
