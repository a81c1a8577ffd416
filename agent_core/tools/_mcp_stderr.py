"""A stdio MCP server's stderr: a pipe whose last `RING_BYTES` a thread keeps in memory.

A file would grow as long as the server writes (one wrote 8.4 GB in 26 s, to a file already
unlinked, so neither `ls` nor `du` showed it). Only the end is ever quoted (a failure shows
what the server last wrote), so only the end is kept. The SDK hands `errlog` to the
subprocess, which needs a real file descriptor: the pipe's write end.
"""

from __future__ import annotations

import os
import select
import threading
from typing import TextIO

__all__ = ["RING_BYTES", "StderrRing"]

RING_BYTES = 64 * 1024
"""How much of the end of a server's stderr is kept."""
_READ = 64 * 1024
_DRAIN_MAX = 4 * 1024 * 1024  # A flooding server cannot keep `tail` reading forever.
_POLL_S = 0.5  # How often the reader looks up from the pipe to see whether it was closed.


class StderrRing:
    """A pipe for a subprocess's stderr; its last `size` bytes are kept, the rest dropped."""

    def __init__(self, *, size: int = RING_BYTES) -> None:
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._fd = read_fd
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        """The end the subprocess writes to (`errlog`); `spawned()` closes this process's copy."""
        self._size = size
        self._kept = bytearray()
        self._written = 0
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._pump, name="stepwise-mcp-stderr", daemon=True)
        self._thread.start()

    @property
    def written(self) -> int:
        """Bytes the server has written so far (read from the pipe)."""
        with self._lock:
            return self._written

    @property
    def kept(self) -> int:
        """Bytes held now (at most the ring's size)."""
        with self._lock:
            return len(self._kept)

    def spawned(self) -> None:
        """The subprocess has its copy of the write end: close ours, so its exit ends the pipe."""
        if not self.writer.closed:
            self.writer.close()

    def mark(self) -> int:
        """Everything written until now, read: the position to quote from later (`tail`)."""
        with self._lock:
            self._drain()
            return self._written

    def tail(self, chars: int, *, since: int = 0) -> str:
        """The last `chars` bytes written after position `since`, as text."""
        with self._lock:
            self._drain()  # What the server wrote just before it died is in the pipe still.
            fresh = min(len(self._kept), max(0, self._written - since), chars)
            data = bytes(self._kept[len(self._kept) - fresh :]) if fresh else b""
        return data.decode("utf-8", "replace").strip()

    def close(self) -> None:
        """Stop reading; the reader thread closes the pipe as it leaves."""
        self.spawned()
        with self._lock:
            self._closed = True

    def _pump(self) -> None:
        try:
            while True:
                ready, _, _ = select.select([self._fd], [], [], _POLL_S)
                with self._lock:
                    if self._closed or (ready and self._drain()):
                        return
        finally:
            with self._lock:
                self._closed = True
                os.close(self._fd)

    def _drain(self) -> bool:
        """Read what the pipe holds now into the ring (lock held); whether it has ended."""
        if self._closed:
            return False
        got = 0
        while got < _DRAIN_MAX:
            try:
                data = os.read(self._fd, _READ)
            except BlockingIOError:
                return False
            if not data:
                return True
            got += len(data)
            self._written += len(data)
            self._kept += data
            if len(self._kept) > self._size:
                del self._kept[: len(self._kept) - self._size]
        return False
