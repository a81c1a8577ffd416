"""A small bounded pool of PostgreSQL connections, for a store's threads and the control plane.

psycopg's own pool (`psycopg_pool`) is another package; a store needs only this much: at most
`max_size` connections, reused newest first (a warm one), a broken or half-used connection
closed rather than handed out again, and a wait for a free one that ends in `StoreError`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from agent_core.errors import StoreError

__all__ = ["ConnectionPool"]


class ConnectionPool:
    """At most `max_size` connections made by `connect`, lent out one thread at a time.

    Args:
        connect: Opens a new connection (psycopg's `Connection`, autocommit on).
        max_size: The most connections open at once.
        timeout: Seconds to wait for a free connection before `StoreError`.
        where: The database, as error messages name it (no password).
    """

    def __init__(
        self, connect: Callable[[], Any], *, max_size: int, timeout: float, where: str
    ) -> None:
        if max_size < 1:
            raise ValueError(f"max_size must be at least 1, not {max_size}")
        self._connect = connect
        self._idle: list[Any] = []
        self._slots = threading.BoundedSemaphore(max_size)
        self._guard = threading.Lock()
        self._timeout = timeout
        self._where = where
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """Lend a connection for the `with` block; it comes back idle or is closed."""
        if self._closed:
            raise StoreError(f"the PostgreSQL store at {self._where} is closed")
        if not self._slots.acquire(timeout=self._timeout):
            raise StoreError(
                f"no free connection to {self._where} within {self._timeout:g} s: every one "
                "is in use",
                hint="raise the store's max_connections, or run fewer threads against it",
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
        """Keep a connection that is idle and whole; close one a failure left mid-transaction.

        A broken one (the server restarted, the network dropped) closes the idle ones too:
        they were opened to the same server and would fail the next callers one by one.
        """
        broken = conn.closed or conn.broken
        reusable = not broken and conn.info.transaction_status == 0
        with self._guard:
            if reusable and not self._closed:
                self._idle.append(conn)
                return
            stale, self._idle = (self._idle, []) if broken else ([], self._idle)
        for each in (conn, *stale):
            each.close()

    def close(self) -> None:
        """Close the idle connections; those lent out are closed when they come back."""
        with self._guard:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
