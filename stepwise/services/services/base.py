"""`BaseService`: a named consumer of its own message type, registered with the control plane.

A service takes the messages addressed to its name from the queue, handles them, and
publishes what it produced (to the control plane, or to whoever the request names in
`reply_to`). Raising in a handler means "deliver it again" (at-least-once); handlers are
idempotent by message id.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from typing import Any

from stepwise.services._home import remember_home
from stepwise.services.message_queues.base import (
    BaseMessageQueue,
    BaseMessageQueueConsumer,
    CallableMessageConsumer,
)
from stepwise.services.messages import (
    CONTROL_PLANE,
    ActionTypes,
    QueueMessage,
    ServiceDefinition,
    TaskDefinition,
    TaskResult,
)
from stepwise.services.names import check_service_name
from stepwise.services.records import ServiceKind, ServiceRecord

__all__ = ["REPLY_TO", "BaseService", "HopRequest"]

logger = logging.getLogger("stepwise.services")

REPLY_TO = "reply_to"
"""The key in a NEW_TASK message's data naming the message type the result goes to."""
HOP_ID = "hop_id"


class HopRequest(TaskDefinition):
    """A NEW_TASK message's data as a service reads it: the task, its hop, where to reply."""

    hop_id: str | None = None
    reply_to: str = CONTROL_PLANE


class BaseService(ABC):
    """A service: its name routes messages to it, its description guides orchestrators.

    Args:
        message_queue: The queue it consumes from and publishes to.
        service_name: Its name (also its message type).
        description: What it is useful for (an orchestrator's LLM reads it).
        host: Where it can be reached, if it serves HTTP (informational).
        port: Its port, likewise.
        num_workers: How many messages it handles at once (competing consumers in this
            process; replicas in other processes add more).
    """

    kind: ServiceKind = ServiceKind.AGENT

    def __init__(
        self,
        message_queue: BaseMessageQueue,
        *,
        service_name: str,
        description: str,
        host: str | None = None,
        port: int | None = None,
        num_workers: int = 1,
    ) -> None:
        if num_workers < 1:
            raise ValueError("num_workers must be at least 1")
        self.message_queue = message_queue
        self.service_name = check_service_name(service_name)
        self.description = description
        self.host = host
        self.port = port
        self.num_workers = num_workers
        self._consumers: list[BaseMessageQueueConsumer] = []

    @property
    def service_definition(self) -> ServiceDefinition:
        """How the control plane knows this service."""
        return ServiceDefinition(
            service_name=self.service_name,
            description=self.description,
            host=self.host,
            port=self.port,
        )

    def as_consumer(self) -> BaseMessageQueueConsumer:
        """A consumer of this service's messages."""
        return CallableMessageConsumer(message_type=self.service_name, handler=self.process_message)

    @abstractmethod
    async def process_message(self, message: QueueMessage) -> None:
        """Handle one message addressed to this service (raise to have it delivered again)."""

    async def launch_local(self) -> asyncio.Task[Any]:
        """Start consuming in this event loop; cancel the returned task to stop."""
        remember_home(self.message_queue)
        runs = []
        for _ in range(self.num_workers):
            consumer = self.as_consumer()
            self._consumers.append(consumer)
            runs.append((await self.message_queue.register_consumer(consumer))())
        return asyncio.create_task(self._consume(runs), name=f"service {self.service_name}")

    async def _consume(self, runs: list[Any]) -> None:
        try:
            await asyncio.gather(*runs)
        finally:
            consumers, self._consumers = self._consumers, []
            for consumer in consumers:
                await self.message_queue.deregister_consumer(consumer)

    async def launch_server(self) -> None:
        """Consume until cancelled (a service's own process runs this)."""
        task = await self.launch_local()
        try:
            await task
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def register_to_control_plane(
        self, control_plane_url: str, *, token: str | None = None
    ) -> ServiceRecord:
        """Register with a control plane over HTTP (for a service in its own process)."""
        from stepwise.services.client import AsyncServicesClient

        async with AsyncServicesClient(control_plane_url, token=token) as client:
            return await client.register_service(self.service_definition, kind=self.kind)

    async def publish_result(
        self, request: HopRequest, result: str, *, data: dict[str, Any] | None = None
    ) -> None:
        """Send a hop's result where the request asked (the control plane by default)."""
        payload = TaskResult(
            task_id=request.task_id,
            result=result,
            history=[
                {"role": "user", "content": request.input},
                {"role": "assistant", "content": result},
            ],
            data={HOP_ID: request.hop_id, "service_name": self.service_name, **(data or {})},
        )
        await self.message_queue.publish(
            QueueMessage(
                publisher_id=self.service_name,
                type=request.reply_to,
                action=ActionTypes.COMPLETED_TASK,
                data=payload.model_dump(mode="json"),
            )
        )


def ignore(service: BaseService, message: QueueMessage) -> None:
    """Log a message the service has no use for (acknowledged, so it is not redelivered)."""
    logger.warning(
        "service %s ignored a %s message %s", service.service_name, message.action, message.id_
    )
