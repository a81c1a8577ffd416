"""Who is running a step: claims that survive in the store and tell a crash from a live run.

A runner stamps a step it starts with `host:pid:runner@until`: who runs it, and the deadline
of its lease (seconds since the epoch, on the store's clock). While the step runs, its runner
renews the lease every third of `CLAIM_LEASE_S`. Another runner (another tab, another process,
another machine) reads the stamp: the step is interrupted, and may run again, when

- it is this process, but no runner here is running it any more;
- it is another process of this machine that is gone (at once, without waiting the lease);
- or its lease has passed: the only sign a claim from another machine can give.

Deadlines are judged by the store's clock (`store_now`: the database's for PostgreSQL), so
two machines whose clocks disagree still agree on which claims have lapsed.

The stamp reaches the store only once a step has run for `CLAIM_PERSIST_DELAY_S`: a quick step
commits once, when it completes. Until then `IN_FLIGHT` alone keeps the other runners of this
process off the step; another process could start it too within that window, and whichever
commits second gets `ConflictError`, as does a run whose lease lapsed and was taken over.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = [
    "CLAIM_LEASE_S",
    "CLAIM_PERSIST_DELAY_S",
    "IN_FLIGHT",
    "ClaimRegistry",
    "claim_is_stale",
    "claim_owner",
    "claim_stamp",
    "claimed_until",
    "judged_by",
    "new_claim_owner",
]

CLAIM_PERSIST_DELAY_S = 0.02
"""How long a step runs before its claim is written to the store (see the module docstring)."""

_LEASE_ENV = "STEPWISE_CLAIM_LEASE_S"


def _lease_from_env(default: float = 30.0) -> float:
    try:
        lease = float(os.environ.get(_LEASE_ENV, default))
    except ValueError:
        return default
    return lease if lease > 0 else default


CLAIM_LEASE_S = _lease_from_env()
"""How long a stored claim holds without renewal: a step of a killed process on another
machine runs again this long (at most) after its last renewal. Read at each renewal, so a
test may lower it; `STEPWISE_CLAIM_LEASE_S` sets it for a process."""

_HOST = socket.gethostname()

_CLOCK: ContextVar[Callable[[], float]] = ContextVar("stepwise_claim_clock", default=time.time)
"""What the deadlines are judged by (`judged_by`); this machine's clock outside one."""


def new_claim_owner() -> str:
    """A fresh identity for one runner: `host:pid:id`."""
    return f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def claim_stamp(owner: str, until: float) -> str:
    """The claim `owner` stores on a step it runs, its lease ending at `until`."""
    return f"{owner}@{until:.3f}"


def claim_owner(claimed_by: str | None) -> str | None:
    """The runner a claim names (`host:pid:id`), without its deadline."""
    return claimed_by.partition("@")[0] if claimed_by else None


def claimed_until(claimed_by: str | None) -> float | None:
    """When a claim's lease ends; None for none (or one stored before leases)."""
    deadline = (claimed_by or "").partition("@")[2]
    try:
        return float(deadline)
    except ValueError:
        return None


@contextmanager
def judged_by(clock: Callable[[], float]) -> Iterator[None]:
    """Judge leases by `clock` (a store's) within the block, reading it once, if at all."""
    read: list[float] = []

    def once() -> float:
        if not read:
            read.append(clock())
        return read[0]

    token = _CLOCK.set(once)
    try:
        yield
    finally:
        _CLOCK.reset(token)


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
    owner = claim_owner(claimed_by)
    if not owner:
        return True
    if IN_FLIGHT.runs_step(step_id):  # Running here, whoever's stamp the store holds.
        return False
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host == _HOST and pid_text.isdigit():
        pid = int(pid_text)
        if pid == os.getpid() or not _pid_alive(pid):  # This process knows what it runs.
            return True
    until = claimed_until(claimed_by)
    # A claim stored before leases names no deadline: it holds, as it did then.
    return until is not None and until <= _CLOCK.get()()
