"""Who is running a step: claims that survive in the store and tell a crash from a live run.

A runner stamps a step it starts with `host:pid:runner`. Another runner (another tab, or a
new process after a crash) reads the stamp: the step is interrupted, and may run again, when
its process is gone or when it is this process but no runner here is running it any more.

The stamp reaches the store only once a step has run for `CLAIM_PERSIST_DELAY_S`: a quick step
commits once, when it completes. Until then `IN_FLIGHT` alone keeps the other runners of this
process off the step; another process could start it too within that window, and whichever
commits second gets `ConflictError`.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid

__all__ = [
    "CLAIM_PERSIST_DELAY_S",
    "IN_FLIGHT",
    "ClaimRegistry",
    "claim_is_stale",
    "new_claim_owner",
]

CLAIM_PERSIST_DELAY_S = 0.02
"""How long a step runs before its claim is written to the store (see the module docstring)."""

_HOST = socket.gethostname()


def new_claim_owner() -> str:
    """A fresh identity for one runner: `host:pid:id`."""
    return f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # Alive, owned by another user.
        return True
    return True


class ClaimRegistry:
    """The steps this process is running right now, by the runner running each.

    Keyed by (owner, step): a runner whose claim on a step was refused must not erase the
    entry of the runner that holds it.
    """

    def __init__(self) -> None:
        self._owners: dict[str, set[str]] = {}  # step id -> runners running it here
        self._guard = threading.Lock()  # Tabs run steps from several threads.

    def start(self, owner: str, step_id: str) -> None:
        """Record that `owner` began running a step in this process."""
        with self._guard:
            self._owners.setdefault(step_id, set()).add(owner)

    def finish(self, owner: str, step_id: str) -> None:
        """Record that `owner` stopped running a step."""
        with self._guard:
            owners = self._owners.get(step_id, set())
            owners.discard(owner)
            if not owners:
                self._owners.pop(step_id, None)

    def runs_step(self, step_id: str) -> bool:
        """Whether any runner of this process is running the step (claim stored or not)."""
        return step_id in self._owners

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        owner, step_id = key
        return owner in self._owners.get(step_id, ())


IN_FLIGHT = ClaimRegistry()


def claim_is_stale(claimed_by: str | None, step_id: str) -> bool:
    """True when the step's claim belongs to no live run (so the step was interrupted)."""
    if not claimed_by:
        return True
    host, _, rest = claimed_by.partition(":")
    pid_text = rest.partition(":")[0]
    if host != _HOST or not pid_text.isdigit():
        return False  # Another machine: we cannot tell, so we do not steal its step.
    pid = int(pid_text)
    if pid == os.getpid():
        return (claimed_by, step_id) not in IN_FLIGHT
    return not _pid_alive(pid)
