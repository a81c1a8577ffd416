"""`ToolService`: runs tools for agents elsewhere, who call it through `MetaServiceTool`."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from agent_core.tools.base import BaseTool
from stepwise.services.message_queues.base import BaseMessageQueue
from stepwise.services.messages import ActionTypes, QueueMessage, ToolCall, ToolCallResult
from stepwise.services.records import ServiceKind
from stepwise.services.services.base import BaseService, ignore

__all__ = ["ToolService"]

_REMEMBERED_RESULTS = 1_000


class ToolService(BaseService):
    """Answers NEW_TOOL_CALL messages by running the named tool; replies COMPLETED_TOOL_CALL.

    A failing tool, an unknown tool and bad arguments all come back as an error result the
    calling agent reads. A redelivered call (same call id) gets the remembered result
    instead of running the tool twice (for the last 1,000 calls this process handled).

    Args:
        message_queue: The queue.
        tools: The tools it runs (names must be unique).
        service_name: Its name.
        description: What its tools are for.
        **kwargs: `host`, `port`, `num_workers` (see `BaseService`).
    """

    kind = ServiceKind.TOOL

    def __init__(
        self,
        message_queue: BaseMessageQueue,
        tools: Sequence[BaseTool],
        *,
        service_name: str = "default_tool_service",
        description: str = "Runs tools for agents.",
        **kwargs: Any,
    ) -> None:
        super().__init__(
            message_queue, service_name=service_name, description=description, **kwargs
        )
        self.tools = {tool.name: tool for tool in tools}
        if len(self.tools) != len(tools):
            raise ValueError(f"tool names must be unique: {[tool.name for tool in tools]}")
        self._done: OrderedDict[str, ToolCallResult] = OrderedDict()

    async def process_message(self, message: QueueMessage) -> None:
        """Run a NEW_TOOL_CALL's tool (once per call id) and reply to its caller."""
        if message.action is not ActionTypes.NEW_TOOL_CALL:
            ignore(self, message)
            return
        call = ToolCall.model_validate(message.data)
        result = self._done.get(call.id_) or await self._run(call)
        self._remember(result)
        await self.message_queue.publish(
            QueueMessage(
                publisher_id=self.service_name,
                type=call.source_id,
                action=ActionTypes.COMPLETED_TOOL_CALL,
                data=result.model_dump(mode="json"),
            )
        )

    async def _run(self, call: ToolCall) -> ToolCallResult:
        tool = self.tools.get(call.tool_name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            content = (
                f"Error: tool service {self.service_name} has no tool {call.tool_name!r}; "
                f"its tools are: {known}"
            )
            return ToolCallResult(
                id_=call.id_, tool_name=call.tool_name, content=content, is_error=True
            )
        output = await tool.acall(call.arguments, call_id=call.id_)
        return ToolCallResult(
            id_=call.id_, tool_name=call.tool_name, content=output.content, is_error=output.is_error
        )

    def _remember(self, result: ToolCallResult) -> None:
        self._done[result.id_] = result
        self._done.move_to_end(result.id_)
        while len(self._done) > _REMEMBERED_RESULTS:
            self._done.popitem(last=False)
