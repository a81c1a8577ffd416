"""`HopWatch`: no task waits forever on a hop nobody will answer.

A sent hop waits on its service. Three things can leave it waiting for good: no process
consumes that service (never started, or a name registered by hand), every replica of it
died, or the queue lost the message (Redis restarted without persistence). The watch runs
beside the control plane's consumer and, every `hop_timeout / 4` seconds (5 s at most):

- asks the queue whether it lost its messages (Redis restarted empty or was flushed, or a
  consumer found its stream or group deleted or evicted); if so, every running task is taken
  a hop further at once: its hop in flight is sent again (with its original message id,
  which services deduplicate: a hop that ran republishes its recorded result, which the
  control plane refuses as a duplicate), and a task whose NEW_TASK was lost gets its first
  hop; `health` says the queue is degraded until every hop sent again has moved on;
- for each sent hop older than `hop_timeout`, asks the queue whether a live consumer of its
  service holds or can take it; if one does, the hop's clock starts again (a long hop is
  never cut short); if none does, the hop is sent again once, and past `hop_timeout` again
  its task fails with a reason that names the service and what to do.

The watch runs on its own clock, whether or not messages arrive, and a failed check never
stops it. Hops of tasks waiting for a person (step mode, the human inbox) are not timed: they
wait on a person, not a process.

When each hop is next looked at, and whether it was sent again, are in the control plane's
database, and a hop is sent again or failed only under its task's lock: control planes that
share a PostgreSQL database each run a watch, and a hop is still sent again once, not once
per control plane.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Protocol

from stepwise.services.control_plane.state import ControlPlaneState
from stepwise.services.errors import QueueUnavailableError
from stepwise.services.message_queues.base import BaseMessageQueue
from stepwise.services.records import HopRecord, HopStatus, TaskStatus

__all__ = ["HopWatch", "QueueHealth", "Router"]

logger = logging.getLogger("stepwise.services.control_plane")

_MAX_INTERVAL = 5.0


class Router(Protocol):
    """What the watch uses of the control plane (`ControlPlaneServer`), which owns it."""

    message_queue: BaseMessageQueue
    state: ControlPlaneState
    hop_timeout: float

    def _lock(self, task_id: str) -> AbstractAsyncContextManager[None]: ...

    async def _advance(self, task_id: str, *, resend: bool) -> None: ...

    async def _dispatch(self, hop: HopRecord) -> None: ...

    def _fail(self, task_id: str, error: str) -> None: ...


@dataclass
class QueueHealth:
    """What the control plane's `/health` says of its queue.

    `ok`; `degraded` (serving, recovering: the queue lost messages and the hops sent again
    have not all moved on, or the last check could not reach Redis); or `down` (its consumer
    stopped: it hears nothing, so `/health` answers 503 for a supervisor to restart it).
    """

    status: str = "ok"
    detail: str = ""
    resent: set[str] = field(default_factory=set)  # Hops sent again, until they move on.

    def as_dict(self) -> dict[str, str]:
        """The body of `/health`."""
        return {"status": self.status, "queue": self.detail} if self.detail else {"status": "ok"}

    def degrade(self, detail: str) -> None:
        """Report trouble, unless the consumer is down (worse, and it stays so)."""
        if self.status != "down":
            self.status, self.detail = "degraded", detail

    def recover(self) -> None:
        """Report the queue healthy again."""
        if self.status != "down":
            self.status, self.detail = "ok", ""
            self.resent.clear()


class HopWatch:
    """Sends again, or fails, hops no live consumer will answer (see the module docstring)."""

    def __init__(self, server: Router) -> None:
        self._server = server
        self.health = QueueHealth()

    @property
    def interval(self) -> float:
        """Seconds between two checks."""
        return min(self._server.hop_timeout / 4, _MAX_INTERVAL)

    async def run(self) -> None:
        """Check every `interval` seconds until cancelled."""
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.check()
            except QueueUnavailableError as exc:  # Redis is down: look again next time.
                logger.warning("hop watch: %s", exc.message)
                self.health.degrade(f"unreachable: {exc.message}")
            except Exception:  # A bug must not stop the watch for good.
                logger.exception("hop watch: a check failed")

    async def check(self) -> None:
        """One pass: resend everything after a loss, then time out hops nobody holds."""
        server = self._server
        if await server.message_queue.lost_messages():
            await self._resend_all()
            return
        self._settle_health()
        now, timeout = time.time(), server.hop_timeout
        served: dict[str, bool] = {}  # Asked once per service per pass, however many hops.
        for hop in server.state.due_hops(now=now, timeout=timeout):
            name = hop.service_name or ""
            if name not in served:
                served[name] = await server.message_queue.has_live_consumer(name)
            if served[name]:
                server.state.watch_hop(hop.hop_id, until=now + timeout)
            else:
                await self._time_out(hop, now)
        for task_id in server.state.running_without_hop(before=now - timeout):
            async with server._lock(task_id):  # Its NEW_TASK never arrived: route it now.
                if server.state.open_hop(task_id) is None:
                    await server._advance(task_id, resend=False)

    async def _resend_all(self) -> None:
        state = self._server.state
        running = state.running_task_ids()
        state.reset_watch()
        if not running:
            return  # A fresh Redis, or nothing was in flight.
        logger.warning(
            "the message queue lost messages (Redis restarted or was flushed without its "
            "data, or a stream or its group was deleted or evicted): sending the hop in "
            "flight of %d running task(s) again",
            len(running),
        )
        for task_id in running:
            await self._advance(task_id)
            if (hop := state.open_hop(task_id)) is not None:
                self.health.resent.add(hop.hop_id)
        self.health.degrade(
            "lost messages: its streams and groups recreated, "
            f"{len(self.health.resent)} hop(s) re-sent, waiting for their results"
        )

    def _settle_health(self) -> None:
        """Report the queue healthy once Redis answers and every re-sent hop moved on."""
        health = self.health
        health.resent = {hop_id for hop_id in health.resent if self._still_sent(hop_id)}
        if health.status == "degraded" and not health.resent:
            if health.detail.startswith("lost messages"):
                logger.info("the message queue recovered: every hop sent again moved on")
            health.recover()

    def _still_sent(self, hop_id: str) -> bool:
        state = self._server.state
        hop = state.get_hop(hop_id)
        # A task waiting for a person got its hop: the wait is the person's, not the queue's.
        running = state.get_task(hop.task_id).status is TaskStatus.RUNNING
        return hop.status is HopStatus.SENT and running

    async def _advance(self, task_id: str) -> None:
        server = self._server
        async with server._lock(task_id):
            await server._advance(task_id, resend=True)

    async def _time_out(self, hop: HopRecord, now: float) -> None:
        server = self._server
        timeout = server.hop_timeout
        async with server._lock(hop.task_id):
            # Claimed in the database: another control plane may have just sent it again.
            state = server.state
            if state.claim_resend(hop.hop_id, now=now, timeout=timeout, until=now + timeout):
                logger.warning(
                    "hop %d of task %s: no live consumer of service %r took it within %g s; "
                    "sending it again",
                    hop.seq, hop.task_id, hop.service_name, timeout,
                )  # fmt: skip
                await server._dispatch(state.get_hop(hop.hop_id))
                return
            if not state.due_resends(hop.hop_id, now=now, timeout=timeout):
                return  # Not due any more, or not sent: it moved on.
            server._fail(
                hop.task_id,
                f"hop {hop.seq} to service {hop.service_name!r} timed out: no live process "
                f"consumed it within {timeout:g} s, twice (it was sent again once): the "
                "service is not running, or every replica of it died. Start it (stepwise "
                "services up) and create the task again, or raise the control plane's "
                "hop_timeout",
            )
