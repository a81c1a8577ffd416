"""`HumanService`: a person as a service. Its requests wait in the control plane's inbox.

A NEW_TASK becomes a `HumanRequest` in the control plane's inbox (REQUEST_FOR_HELP), which
the app's Services page lists and answers through the control plane's HTTP API
(`POST /human/requests/{id}/answer`); the answer goes back as the hop's result. Scripts
without the app can ask in the terminal instead (`terminal=True`, or any `input_fn`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from stepwise.services.message_queues.base import BaseMessageQueue
from stepwise.services.messages import CONTROL_PLANE, ActionTypes, QueueMessage
from stepwise.services.records import HumanRequest, ServiceKind
from stepwise.services.services.base import BaseService, HopRequest, ignore

__all__ = ["DEFAULT_HUMAN_PROMPT", "HumanService"]

DEFAULT_HUMAN_PROMPT = "A task needs your answer.\n---\n{input}\n---\nYour answer: "


class HumanService(BaseService):
    """Asks a person: through the control plane's inbox, or in the terminal.

    Args:
        message_queue: The queue.
        service_name: Its name.
        description: When an orchestrator should ask this person.
        terminal: Ask with `input()` in this process instead of the inbox (for scripts).
        input_fn: What asks in terminal mode (default `input`); giving one implies
            `terminal=True`. It may block: it runs in a worker thread.
        prompt: The terminal question, with `{input}` for the request.
        **kwargs: `host`, `port`, `num_workers` (see `BaseService`).
    """

    kind = ServiceKind.HUMAN

    def __init__(
        self,
        message_queue: BaseMessageQueue,
        *,
        service_name: str = "human",
        description: str = "Asks a person; useful when the task needs human judgement.",
        terminal: bool = False,
        input_fn: Callable[[str], str] | None = None,
        prompt: str = DEFAULT_HUMAN_PROMPT,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            message_queue, service_name=service_name, description=description, **kwargs
        )
        self.terminal = terminal or input_fn is not None
        self.input_fn: Callable[[str], str] = input_fn or input
        self.prompt = prompt
        self._answered: dict[str, str] = {}

    async def process_message(self, message: QueueMessage) -> None:
        """Ask the person about a NEW_TASK: put it in the inbox, or ask in the terminal."""
        if message.action is not ActionTypes.NEW_TASK:
            ignore(self, message)
            return
        request = HopRequest.model_validate(message.data)
        if not self.terminal:
            await self._post_to_inbox(message.id_, request)
            return
        answer = self._answered.get(message.id_)
        if answer is None:
            question = self.prompt.format(input=request.input)
            answer = await asyncio.to_thread(self.input_fn, question)
            self._answered[message.id_] = answer
        await self.publish_result(request, answer)

    async def _post_to_inbox(self, request_id: str, request: HopRequest) -> None:
        inbox_item = HumanRequest(
            request_id=request_id,  # A redelivered request lands on the same inbox entry.
            task_id=request.task_id,
            hop_id=request.hop_id,
            service_name=self.service_name,
            prompt=request.input,
            reply_to=request.reply_to,
            created_at=time.time(),
        )
        await self.message_queue.publish(
            QueueMessage(
                publisher_id=self.service_name,
                type=CONTROL_PLANE,
                action=ActionTypes.REQUEST_FOR_HELP,
                data=inbox_item.model_dump(mode="json"),
            )
        )
