"""Commit listeners: who hears each commit a store makes, in the committing thread.

A store calls `CommitListeners.tell` once its transaction is durable, so a listener never hears
of a change that was rolled back. Listeners run on the committer's thread and must not block:
the host's event hub only hands the state to its loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from agent_core.types import TaskState

__all__ = ["CommitListener", "CommitListeners"]

log = logging.getLogger("agent_core.store")

CommitListener = Callable[[TaskState], None]
"""Called with the task's state as just committed."""


class CommitListeners:
    """The listeners of one store; adding returns the function that removes the listener."""

    def __init__(self) -> None:
        self._listeners: tuple[CommitListener, ...] = ()
        self._guard = threading.Lock()

    def add(self, listener: CommitListener) -> Callable[[], None]:
        """Hear every later commit; call the returned function to stop."""
        with self._guard:
            self._listeners = (*self._listeners, listener)

        def remove() -> None:
            with self._guard:
                self._listeners = tuple(f for f in self._listeners if f is not listener)

        return remove

    def tell(self, state: TaskState) -> None:
        """Tell every listener; one that raises is logged and the others still hear."""
        for listener in self._listeners:  # A tuple: adding or removing meanwhile is safe.
            try:
                listener(state)
            except Exception:  # The commit stands; a listener's bug must not undo it.
                log.exception("a commit listener failed for task %s", state.task_id)
