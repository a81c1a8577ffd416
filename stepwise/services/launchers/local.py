"""`LocalLauncher`: the whole system in this process, on one event loop, one task at a time.

For scripts, notebooks and tests: nothing to start but Python.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from agent_core.runtime.loop import run_sync
from stepwise.services.control_plane.server import ControlPlaneServer
from stepwise.services.errors import TaskFailedError
from stepwise.services.message_queues.base import BaseMessageQueue
from stepwise.services.services.base import BaseService

__all__ = ["LocalLauncher"]


class LocalLauncher:
    """Runs services, control plane and queue in this process and sends them one task.

    Args:
        services: The services.
        control_plane: The control plane (its HTTP API is not started).
        message_queue: The queue they share.
    """

    def __init__(
        self,
        services: Sequence[BaseService],
        control_plane: ControlPlaneServer,
        message_queue: BaseMessageQueue,
    ) -> None:
        self.services = list(services)
        self.control_plane = control_plane
        self.message_queue = message_queue

    def launch_single(self, initial_task: str, *, timeout: float | None = None) -> str:
        """Run one task through the system and return its result.

        Runs on Stepwise's runtime loop, which outlives the call, so the launcher can be
        used again. Inside a running event loop, `await alaunch_single(...)` instead.

        Raises:
            TaskFailedError: The task failed (the message says why).
            TimeoutError: It had not finished within `timeout` seconds.
        """
        return run_sync(self.alaunch_single(initial_task, timeout=timeout), name="launch_single")

    async def alaunch_single(self, initial_task: str, *, timeout: float | None = None) -> str:  # noqa: ASYNC109
        """Async twin of `launch_single`, on the running loop."""
        running = await self._start()
        try:
            task = await self.control_plane.create_task(initial_task)
            done = await self.control_plane.wait_for_task(task.task_id, timeout=timeout)
        finally:
            await _stop(running)
        if done.result is None:
            raise TaskFailedError(
                f"task {done.task_id} failed: {done.error}",
                hint="the control plane's hops (control_plane.state.hops(task_id)) show where",
                task_id=done.task_id,
            )
        return done.result

    async def _start(self) -> list[asyncio.Task[Any]]:
        running: list[asyncio.Task[Any]] = []
        queue_task = await self.message_queue.launch_local()
        if queue_task is not None:
            running.append(queue_task)
        running.append(await self.control_plane.launch_local())
        for service in self.services:
            await self.control_plane.register_service(service.service_definition, kind=service.kind)
            running.append(await service.launch_local())
        return running


async def _stop(running: list[asyncio.Task[Any]]) -> None:
    for task in reversed(running):
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)
