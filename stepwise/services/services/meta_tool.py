"""`MetaServiceTool`: a tool an agent calls that runs on a `ToolService` elsewhere.

The agent sees an ordinary tool (name, description, schema); a call publishes NEW_TOOL_CALL
to the tool service and awaits its COMPLETED_TOOL_CALL. No answer within `timeout` seconds
becomes an error text the agent reads, never a hang or a crash.
"""

from __future__ import annotations

from typing import Any

from agent_core.tools.base import BaseTool, ToolMetadata
from agent_core.types import ToolOutput
from stepwise.services._replies import ReplyInbox
from stepwise.services.message_queues.base import BaseMessageQueue
from stepwise.services.messages import ActionTypes, QueueMessage, ToolCall, ToolCallResult, new_id
from stepwise.services.services.tool import ToolService

__all__ = ["MetaServiceTool"]


class MetaServiceTool(BaseTool):
    """Stands in for a tool that a `ToolService` runs.

    Args:
        tool_metadata: The remote tool's name, description and argument schema.
        message_queue: The queue the tool service consumes from.
        tool_service_name: The tool service's name.
        timeout: Seconds to wait for the result.
    """

    def __init__(
        self,
        tool_metadata: ToolMetadata,
        message_queue: BaseMessageQueue,
        tool_service_name: str,
        *,
        timeout: float = 60.0,
    ) -> None:
        self._metadata = tool_metadata
        self.message_queue = message_queue
        self.tool_service_name = tool_service_name
        self.timeout = timeout
        self._inbox = ReplyInbox(
            message_queue, prefix=f"tool.{tool_metadata.name}", key_of=_call_id
        )

    @classmethod
    def from_tool_service(
        cls,
        name: str,
        tool_service: ToolService,
        *,
        message_queue: BaseMessageQueue | None = None,
        timeout: float = 60.0,
    ) -> MetaServiceTool:
        """The stand-in for `tool_service`'s tool `name` (its metadata read in process).

        Raises:
            KeyError: The tool service has no such tool.
        """
        tool = tool_service.tools.get(name)
        if tool is None:
            known = ", ".join(sorted(tool_service.tools)) or "none"
            raise KeyError(
                f"tool service {tool_service.service_name} has no tool {name!r}: {known}"
            )
        return cls(
            tool.metadata,
            message_queue or tool_service.message_queue,
            tool_service.service_name,
            timeout=timeout,
        )

    @property
    def metadata(self) -> ToolMetadata:
        """The remote tool's name, description and argument schema."""
        return self._metadata

    async def acall(self, args: dict[str, Any], *, call_id: str = "") -> ToolOutput:
        """Have the tool service run the call; a timeout comes back as an error output."""
        call = ToolCall(
            id_=new_id(),
            tool_name=self.name,
            arguments=dict(args or {}),
            source_id=self._inbox.reply_type,
        )
        message = QueueMessage(
            publisher_id=self._inbox.reply_type,
            type=self.tool_service_name,
            action=ActionTypes.NEW_TOOL_CALL,
            data=call.model_dump(mode="json"),
        )
        try:
            reply = await self._inbox.request(message, key=call.id_, timeout=self.timeout)
        except TimeoutError:
            content = (
                f"Error: tool `{self.name}` (on service {self.tool_service_name}) gave no answer "
                f"within {self.timeout:g} s, so it may not have run. The tool service may be "
                "down or busy: try again later, or go on without this tool."
            )
            return ToolOutput(
                tool_name=self.name, args=call.arguments, content=content, is_error=True,
                call_id=call_id,
            )  # fmt: skip
        result = ToolCallResult.model_validate(reply.data)
        return ToolOutput(
            tool_name=self.name,
            args=call.arguments,
            content=result.content,
            is_error=result.is_error,
            call_id=call_id,
        )

    async def close(self) -> None:
        """Stop listening for results."""
        await self._inbox.close()


def _call_id(message: QueueMessage) -> str | None:
    value = message.data.get("id_")
    return value if isinstance(value, str) else None
