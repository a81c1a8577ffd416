"""`Connections`: a few PostgreSQL connections the control plane's threads borrow in turn.

(`agent_core`'s store has a pool of its own, private to it; this is the little the control
plane needs.) At most `size` connections, a warm one lent first, and one left broken or
mid-transaction closed rather than lent again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from agent_core.errors import StoreError

__all__ = ["Connections"]


class Connections:
    """At most `size` connections made by `connect`, each lent to one borrower at a time."""

    def __init__(
        self, connect: Callable[[], Any], *, size: int, timeout: float, where: str
    ) -> None:
        self._connect = connect
        self._idle: list[Any] = []
        self._slots = threading.BoundedSemaphore(size)
        self._guard = threading.Lock()
        self._timeout = timeout
        self._where = where

    @contextmanager
    def lend(self) -> Iterator[Any]:
        """A connection for the `with` block (autocommit on)."""
        if not self._slots.acquire(timeout=self._timeout):
            raise StoreError(
                f"the control plane found no free connection to {self._where} within "
                f"{self._timeout:g} s"
            )
        try:
            conn = self._take()
            try:
                yield conn
            finally:
                self._give_back(conn)
        finally:
            self._slots.release()

    def _take(self) -> Any:
        with self._guard:
            while self._idle:
                conn = self._idle.pop()
                if not (conn.closed or conn.broken):
                    return conn
        return self._connect()

    def _give_back(self, conn: Any) -> None:
        if conn.closed or conn.broken or conn.info.transaction_status != 0:
            conn.close()
            return
        with self._guard:
            self._idle.append(conn)

    def close(self) -> None:
        """Close the idle connections."""
        with self._guard:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
