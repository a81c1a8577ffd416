"""`PipelineOrchestrator`: a fixed sequence of services, each output the next one's input."""

from __future__ import annotations

from typing import Any

from stepwise.services.errors import UnknownServiceError
from stepwise.services.messages import TaskDefinition, TaskResult
from stepwise.services.orchestrators.base import BaseOrchestrator, Decision, FinalAnswer, NextHop
from stepwise.services.records import HopRecord, ServiceRecord

__all__ = ["PipelineOrchestrator"]

_NEXT = "next"
_LAST_OUTPUT = "last_output"


class PipelineOrchestrator(BaseOrchestrator):
    """Runs the services in order: the task's input goes to the first, each output to the next.

    Needs no LLM. The last service's output is the task's answer. An edited hop (step mode)
    counts as the pipeline's current position: the next hop goes to the next service in the
    list, with whatever the edited hop returned.

    Args:
        service_names: The services, in order.
    """

    def __init__(self, service_names: list[str]) -> None:
        if not service_names:
            raise ValueError("a pipeline needs at least one service name")
        self.service_names = list(service_names)

    async def get_next_hop(
        self, task: TaskDefinition, services: list[ServiceRecord], state: dict[str, Any]
    ) -> tuple[Decision, dict[str, Any]]:
        """The next service in the list, or the last output once every service ran."""
        position = int(state.get(_NEXT, 0))
        text = str(state.get(_LAST_OUTPUT, task.input))
        if position >= len(self.service_names):
            return FinalAnswer(result=text), state
        name = self.service_names[position]
        if name not in {service.service_name for service in services}:
            raise UnknownServiceError(
                f"the pipeline's service {name!r} is not registered with the control plane",
                hint="launch it (its service_name must match the pipeline's list) before "
                "sending tasks",
            )
        return NextHop(service_name=name, input=text), state

    async def add_result_to_state(
        self, hop: HopRecord, result: TaskResult, state: dict[str, Any]
    ) -> dict[str, Any]:
        """Move to the next service, carrying this output."""
        return {_NEXT: int(state.get(_NEXT, 0)) + 1, _LAST_OUTPUT: result.result}
