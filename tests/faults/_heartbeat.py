"""A heartbeat on the runtime loop: how long the loop went without running its callbacks.

Every step runs on the runtime's one loop (`agent_core.runtime.loop.runtime_loop`). A callback
there every 20 ms records how late it ran: anything that blocks the loop (a parser stuck on
a flood, a tool computing inline) shows as a late beat.

Two measures: `max_late_s` is wall time, which a loaded machine stretches (two test groups on
two cores made a 0.25 s hold read 1.9 s); `max_busy_s` is the loop thread's own CPU time
between two beats, which load does not stretch. A loop stuck computing shows in both; a loop
stuck sleeping or waiting shows only in the first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from agent_core.runtime.loop import runtime_loop

PERIOD_S = 0.02


class Heartbeat:
    """Measures the largest lateness of a periodic callback on the runtime loop."""

    def __init__(self) -> None:
        self.max_late_s = 0.0
        self.max_busy_s = 0.0
        self._cpu = 0.0
        self._loop = runtime_loop()
        self._expected = 0.0
        self._running = False
        self._first = threading.Event()

    def _beat(self) -> None:
        now, cpu = time.monotonic(), time.thread_time()  # This runs on the loop's thread.
        if self._expected:
            self.max_late_s = max(self.max_late_s, now - self._expected)
            self.max_busy_s = max(self.max_busy_s, cpu - self._cpu)
        self._cpu = cpu
        self._first.set()
        if self._running:
            self._expected = now + PERIOD_S
            self._loop.call_later(PERIOD_S, self._beat)

    @contextmanager
    def watching(self) -> Iterator[Heartbeat]:
        """Beat while the body runs; `max_late_s` then holds the longest stall."""
        self._running = True
        self._loop.call_soon_threadsafe(self._beat)
        self._first.wait(timeout=5)
        try:
            yield self
        finally:
            self._running = False
            done = threading.Event()
            self._loop.call_soon_threadsafe(done.set)  # The last beat has run by then.
            done.wait(timeout=5)
