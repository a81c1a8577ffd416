"""What `stepwise services up` does while its parts run: restart a dead one, with backoff.

Each part (the control plane, each replica of each service) is a child process. One that
exits is started again after a pause that doubles with each fast failure (an exit within
`FAST_FAILURE_S` of its start), from `FIRST_DELAY_S` to `MAX_DELAY_S`; one that ran longer
starts again at the first pause. Each restart is printed. After `MAX_FAST_FAILURES` fast
failures in a row the part cannot start, and `up` stops every part and says so. A part that
exits with `REFUSED` (its configuration was refused: the message is above) is never
restarted: running it again would be refused again.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "FAST_FAILURE_S",
    "FIRST_DELAY_S",
    "MAX_DELAY_S",
    "MAX_FAST_FAILURES",
    "REFUSED",
    "Part",
    "supervise",
]

REFUSED = 78  # EX_CONFIG (sysexits.h): the part's configuration was refused.
FAST_FAILURE_S = 10.0
FIRST_DELAY_S = 0.5
MAX_DELAY_S = 30.0
MAX_FAST_FAILURES = 5
_POLL_S = 0.2


@dataclass
class Part:
    """One child process of `up`, and its restart record."""

    label: str
    start: Callable[[], subprocess.Popen[bytes]]
    announce: Callable[[int], str]
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    fast_failures: int = 0
    restart_at: float | None = field(default=None)

    def launch(self) -> None:
        """Start (or start again) its process."""
        self.process = self.start()
        self.started_at = time.monotonic()
        self.restart_at = None


def supervise(parts: list[Part], stop: threading.Event | None = None) -> int:
    """Watch `parts` (already launched) until one cannot start or `stop` is set.

    Returns 1 when a part cannot start (the reason printed), 0 when stopped.
    """
    stop = stop or threading.Event()
    while not stop.is_set():
        now = time.monotonic()
        for part in parts:
            if part.restart_at is not None:
                if now >= part.restart_at:
                    part.launch()
                    assert part.process is not None
                    _say(f"restarted {part.announce(part.process.pid)}", err=False)
                continue
            assert part.process is not None
            code = part.process.poll()
            if code is not None and not _schedule_restart(part, code, now):
                return 1
        stop.wait(_POLL_S)
    return 0


def _schedule_restart(part: Part, code: int, now: float) -> bool:
    """Plan the part's restart and say so; False when it must not be restarted (said why)."""
    assert part.process is not None
    pid = part.process.pid
    if code == REFUSED:
        _say(f"{part.label} (pid {pid}) refused to start (why is above); stopping every part")
        return False
    fast = now - part.started_at < FAST_FAILURE_S
    part.fast_failures = part.fast_failures + 1 if fast else 0
    if part.fast_failures >= MAX_FAST_FAILURES:
        _say(
            f"{part.label} exited {part.fast_failures} times within {FAST_FAILURE_S:g} s of "
            f"starting (last exit status {code}); giving up and stopping every part (its "
            "error is above)"
        )
        return False
    delay = min(MAX_DELAY_S, FIRST_DELAY_S * 2 ** max(0, part.fast_failures - 1))
    part.restart_at = now + delay
    _say(f"{part.label} (pid {pid}) exited with status {code}; restarting it in {delay:g} s")
    return True


def _say(text: str, *, err: bool = True) -> None:
    print(f"stepwise services up: {text}", file=sys.stderr if err else sys.stdout, flush=True)
