"""Who is running a step: claims that survive in the store and tell a crash from a live run.

A runner stamps a step it starts with `host:pid:runner`. Another runner (another tab, or a
new process after a crash) reads the stamp: the step is interrupted, and may run again, when
its process is gone or when it is this process but no runner here is running it any more.
"""

from __future__ import annotations

import os
import socket
import uuid

__all__ = ["ClaimRegistry", "claim_is_stale", "new_claim_owner"]

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
        self._running: set[tuple[str, str]] = set()

    def start(self, owner: str, step_id: str) -> None:
        """Record that `owner` began running a step in this process."""
        self._running.add((owner, step_id))

    def finish(self, owner: str, step_id: str) -> None:
        """Record that `owner` stopped running a step."""
        self._running.discard((owner, step_id))

    def __contains__(self, key: object) -> bool:
        return key in self._running


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
