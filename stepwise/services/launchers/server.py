"""`ServerLauncher`: every component as its own long-running server or consumer loop.

`launch_servers()` runs them all on this process's loop until cancelled: the control plane
with its HTTP API, and each service's consumers. For several processes (with a broker such
as Redis), run `serve_control_plane` in one and `serve_service` in each of the others.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import httpx

from agent_core.runtime.loop import run_sync
from stepwise.services.control_plane.server import ControlPlaneServer
from stepwise.services.message_queues.base import BaseMessageQueue
from stepwise.services.services.base import BaseService

__all__ = ["ServerLauncher", "serve_control_plane", "serve_service"]


class ServerLauncher:
    """Runs the control plane (consumer + HTTP API) and every service until stopped.

    Args:
        services: The services (registered with the control plane directly).
        control_plane: The control plane; its API listens on its `host` and `port`.
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

    async def launch_servers(self) -> None:
        """Run everything on this loop until cancelled (Ctrl-C in `launch_servers_sync`)."""
        running: list[asyncio.Task[Any]] = []
        queue_task = await self.message_queue.launch_local()
        if queue_task is not None:
            running.append(queue_task)
        for service in self.services:
            await self.control_plane.register_service(service.service_definition, kind=service.kind)
            running.append(await service.launch_local())
        try:
            await self.control_plane.launch_server()
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    def launch_servers_sync(self) -> None:
        """Sync twin of `launch_servers`, for a script's main."""
        run_sync(self.launch_servers(), name="launch_servers")


async def serve_control_plane(control_plane: ControlPlaneServer) -> None:
    """Run a control plane in this process (consumer + HTTP API) until cancelled."""
    queue_task = await control_plane.message_queue.launch_local()
    try:
        await control_plane.launch_server()
    finally:
        if queue_task is not None:
            queue_task.cancel()


async def serve_service(
    service: BaseService,
    control_plane_url: str,
    *,
    token: str | None = None,
    register_within: float = 60.0,
) -> None:
    """Register `service` with the control plane at `control_plane_url`, then consume forever.

    A control plane that is not up yet (processes start in any order) is asked again until
    `register_within` seconds have passed.
    """
    queue_task = await service.message_queue.launch_local()
    consuming = await service.launch_local()  # Consuming first: no hop waits on a late start.
    try:
        await _register(service, control_plane_url, token, register_within)
        await consuming
    finally:
        consuming.cancel()
        if queue_task is not None:
            queue_task.cancel()


async def _register(service: BaseService, url: str, token: str | None, within: float) -> None:
    deadline = time.monotonic() + within
    pause = 0.05
    while True:
        try:
            await service.register_to_control_plane(url, token=token)
            return
        except httpx.TransportError as exc:
            if time.monotonic() + pause > deadline:
                raise ConnectionError(
                    f"service {service.service_name} could not reach the control plane at "
                    f"{url} for {within:g} s ({exc}); start it, or check its address"
                ) from exc
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)
