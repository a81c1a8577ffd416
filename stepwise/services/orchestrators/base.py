"""`BaseOrchestrator`: decides a task's next hop, or that it is finished.

An orchestrator holds no task state itself: the control plane passes the task's state in
and stores what comes back, in the same transaction as the hop, so a restarted control
plane continues every task where it was.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from pydantic import BaseModel

from stepwise.services.messages import TaskDefinition, TaskResult
from stepwise.services.records import HopRecord, ServiceRecord

__all__ = ["BaseOrchestrator", "Decision", "FinalAnswer", "NextHop"]


class NextHop(BaseModel):
    """Send `input` to the service `service_name` next."""

    service_name: str
    input: str


class FinalAnswer(BaseModel):
    """The task is done; `result` is its answer."""

    result: str


Decision = NextHop | FinalAnswer


class BaseOrchestrator(ABC):
    """Chooses hops: which service gets a task next, with what input."""

    @abstractmethod
    async def get_next_hop(
        self, task: TaskDefinition, services: list[ServiceRecord], state: dict[str, Any]
    ) -> tuple[Decision, dict[str, Any]]:
        """The next hop (or the final answer) for `task`, and the task's new state.

        Args:
            task: The task.
            services: The services that take tasks (agent and human services).
            state: What this orchestrator stored for the task last time ({} at first).
        """

    @abstractmethod
    async def add_result_to_state(
        self, hop: HopRecord, result: TaskResult, state: dict[str, Any]
    ) -> dict[str, Any]:
        """The task's new state once `hop` returned `result`.

        `hop.service_name` and `hop.input` are what ran; when a person edited the hop they
        differ from `hop.proposed_service` and `hop.proposed_input`.
        """
