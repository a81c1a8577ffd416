"""`ServiceAsTool`: a whole service (an agent, a person) as one tool another agent calls."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_core.tools.base import BaseTool, ToolMetadata
from agent_core.types import ToolOutput
from stepwise.services._replies import ReplyInbox
from stepwise.services.message_queues.base import BaseMessageQueue
from stepwise.services.messages import (
    ActionTypes,
    QueueMessage,
    ServiceDefinition,
    TaskResult,
    new_id,
)
from stepwise.services.services.base import HopRequest

__all__ = ["ServiceAsTool"]


class _ServiceInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: str = Field(description="What to ask the service.")


class ServiceAsTool(BaseTool):
    """Calls a service with one string `input` and returns its answer as the tool's output.

    Args:
        service_definition: The service (its name is the tool's name, its description the
            tool's description).
        message_queue: The queue the service consumes from.
        timeout: Seconds to wait for the answer; longer ones become an error the agent reads.
    """

    def __init__(
        self,
        service_definition: ServiceDefinition,
        message_queue: BaseMessageQueue,
        *,
        timeout: float = 120.0,
    ) -> None:
        self.service_definition = service_definition
        self.message_queue = message_queue
        self.timeout = timeout
        self._metadata = ToolMetadata(
            name=service_definition.service_name,
            description=service_definition.description,
            fn_schema=_ServiceInput,
        )
        self._inbox = ReplyInbox(
            message_queue, prefix=f"service.{service_definition.service_name}", key_of=_hop_id
        )

    @classmethod
    def from_service(cls, service: Any, *, timeout: float = 120.0) -> ServiceAsTool:
        """The tool for a service object in this process (any `BaseService`)."""
        return cls(service.service_definition, service.message_queue, timeout=timeout)

    @property
    def metadata(self) -> ToolMetadata:
        """The tool's name, description and schema (one string, `input`)."""
        return self._metadata

    async def acall(self, args: dict[str, Any], *, call_id: str = "") -> ToolOutput:
        """Send the service a task and wait for its answer."""
        text = (args or {}).get("input")
        if not isinstance(text, str):
            return ToolOutput(
                tool_name=self.name, args=dict(args or {}), is_error=True, call_id=call_id,
                content=f"Error: call {self.name} with one string argument, `input`.",
            )  # fmt: skip
        request = HopRequest(input=text, hop_id=new_id(), reply_to=self._inbox.reply_type)
        message = QueueMessage(
            publisher_id=self._inbox.reply_type,
            type=self.name,
            action=ActionTypes.NEW_TASK,
            data=request.model_dump(mode="json"),
        )
        try:
            reply = await self._inbox.request(
                message, key=str(request.hop_id), timeout=self.timeout
            )
        except TimeoutError:
            content = (
                f"Error: service {self.name} gave no answer within {self.timeout:g} s; it may be "
                "down or busy. Try again later, or go on without it."
            )
            return ToolOutput(
                tool_name=self.name, args={"input": text}, content=content, is_error=True,
                call_id=call_id,
            )  # fmt: skip
        result = TaskResult.model_validate(reply.data)
        return ToolOutput(
            tool_name=self.name, args={"input": text}, content=result.result, call_id=call_id
        )

    async def close(self) -> None:
        """Stop listening for answers."""
        await self._inbox.close()


def _hop_id(message: QueueMessage) -> str | None:
    value = (message.data.get("data") or {}).get("hop_id")
    return value if isinstance(value, str) else None
