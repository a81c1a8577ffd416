"""SQLite's change feed: one thread per host asks the file whether anybody wrote to it.

`PRAGMA data_version` answers, on one connection, a number that changes whenever another
connection (this process's store, the app, `stepwise serve`, a user's program) commits to the
file: a read of a page already in memory, no table scanned, so asking every `TICK_S` costs
nearly nothing however many tasks the file holds. A change wakes the host's listeners (the
event feeds read what moved, stop requests are looked at, a paused program looks for its
decision), so a watcher in another process sees a commit within about `TICK_S` plus a read.

PostgreSQL has no such number; its processes tell each other with NOTIFY (`notify`).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable

__all__ = ["TICK_S", "DataVersionFeed"]

log = logging.getLogger("agent_core.host")

TICK_S = 0.1
"""How often the file is asked whether another connection wrote to it."""


class DataVersionFeed:
    """Calls each listener (on the feed's own thread) after any commit to the SQLite file.

    Args:
        path: The file (the store's `path`).
        tick_s: How often to ask.
    """

    def __init__(self, path: str, *, tick_s: float = TICK_S) -> None:
        self.path, self.tick_s = path, tick_s
        self.changes = 0  # How many changes were seen (for tests and benches).
        self._listeners: tuple[Callable[[], None], ...] = ()
        self._stopping = threading.Event()
        self._db, self._last = self._open()  # Before returning: no commit after it is missed.
        self._thread = threading.Thread(target=self._run, name="sqlite-change-feed", daemon=True)
        self._thread.start()

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call `listener()` after each change seen (it must not block for long)."""
        self._listeners = (*self._listeners, listener)

    def _open(self) -> tuple[sqlite3.Connection | None, int | None]:
        try:
            # A connection of its own: data_version counts the commits of *other* connections.
            db = sqlite3.connect(self.path, check_same_thread=False)
            (version,) = db.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error as exc:
            log.warning("live events: cannot watch %s: %s", self.path, exc)
            return None, None
        return db, version

    def _run(self) -> None:
        db, last = self._db, self._last
        if db is None:
            return
        with contextlib.closing(db):
            while not self._stopping.wait(self.tick_s):
                try:
                    (version,) = db.execute("PRAGMA data_version").fetchone()
                except sqlite3.Error:  # Busy or locked for a moment: ask again next tick.
                    continue
                if version != last:
                    self.changes += 1
                    self._tell()
                last = version

    def _tell(self) -> None:
        for listener in self._listeners:
            try:
                listener()
            except Exception:  # One listener's bug must not stop the feed for the others.
                log.exception("a change-feed listener failed")

    def close(self) -> None:
        """Stop watching."""
        self._stopping.set()
        self._thread.join(timeout=2)
