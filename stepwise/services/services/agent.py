"""`AgentService`: a Stepwise agent as a service; each hop it gets is a Stepwise task.

The hop's Stepwise task lives in the runner's store, so it can be opened, stepped, undone
and inspected in the app like any other. Delivery is at least once, and the service keeps
a ledger in that same store, keyed by the NEW_TASK message's id: a redelivered message
whose hop finished republishes the stored result without running the agent again, and one
whose hop had started resumes its Stepwise task where it stopped.
"""

from __future__ import annotations

from typing import Any

from agent_core.errors import StepError
from agent_core.runtime.runner import AgentRunner
from agent_core.spec import AgentSpec, ProviderName
from agent_core.store.base import Store
from agent_core.types import TaskStatus
from stepwise.services.message_queues.base import BaseMessageQueue
from stepwise.services.messages import ActionTypes, QueueMessage
from stepwise.services.records import ServiceKind
from stepwise.services.services.base import BaseService, HopRequest, ignore

__all__ = ["LEDGER_PREFIX", "AgentService"]

LEDGER_PREFIX = "stepwise.services.hop"
"""Store settings named `<prefix>:<service>:<message id>` record each hop's Stepwise task."""


class AgentService(BaseService):
    """Runs each NEW_TASK it receives as a task of `agent`, to the end, and returns the answer.

    Args:
        agent: The Stepwise runner (any worker, the user's own included). Give it a
            `SQLiteStore` to see the service's tasks in the app. Its shared conversation
            (`conversation_id`) carries over between hops; pass `conversation_id=None` for
            hops that start afresh.
        message_queue: The queue.
        description: What the agent is useful for (the orchestrator's LLM reads it).
        service_name: Its name.
        max_steps: Steps one hop may take before it fails (and is delivered again).
        **kwargs: `host`, `port`, `num_workers` (see `BaseService`).
    """

    kind = ServiceKind.AGENT

    def __init__(
        self,
        agent: AgentRunner,
        message_queue: BaseMessageQueue,
        *,
        description: str = "A Stepwise agent.",
        service_name: str = "default_agent",
        max_steps: int = 100,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            message_queue, service_name=service_name, description=description, **kwargs
        )
        self.agent = agent
        self.max_steps = max_steps

    @classmethod
    def from_agent_target(
        cls,
        target: str,
        message_queue: BaseMessageQueue,
        *,
        service_name: str,
        description: str,
        provider: ProviderName = "demo",
        model: str = "",
        store: Store | None = None,
        **kwargs: Any,
    ) -> AgentService:
        """A service over the user's own agent (`file.py:attr` or `package.module:attr`).

        The agent is built as the app builds it (`AgentSpec`), so its tasks record the
        target and can be rebuilt and stepped in the app.

        Raises:
            UserCodeError: The agent failed to import or build (with the user's traceback).
        """
        spec = AgentSpec(
            name=service_name, agent=service_name, agent_target=target, provider=provider,
            model=model,
        )  # fmt: skip
        runner = spec.build_runner(store=store)
        return cls(
            runner, message_queue, service_name=service_name, description=description, **kwargs
        )

    async def process_message(self, message: QueueMessage) -> None:
        """Run a NEW_TASK's hop (once per message id) and publish its result."""
        if message.action is not ActionTypes.NEW_TASK:
            ignore(self, message)
            return
        request = HopRequest.model_validate(message.data)
        key = f"{LEDGER_PREFIX}:{self.service_name}:{message.id_}"
        entry = self.agent.store.get_setting(key) or {}
        if "result" not in entry:
            task_id = entry.get("task_id") or self._start(request, key)
            entry = {"task_id": task_id, "result": await self._run_to_end(task_id)}
            self.agent.store.put_setting(key, entry)
        await self.publish_result(
            request, entry["result"], data={"service_task_id": entry["task_id"]}
        )

    def _start(self, request: HopRequest, key: str) -> str:
        task = self.agent.create_task(request.input)
        self.agent.store.put_setting(key, {"task_id": task.task_id})
        return task.task_id

    async def _run_to_end(self, task_id: str) -> str:
        """Run the task's steps until its last, then finalize (or just read a finished one)."""
        for _ in range(self.max_steps):
            state = self.agent.get_task_state(task_id)
            last = state.last_output
            if state.task.status is TaskStatus.COMPLETED or (last is not None and last.is_last):
                return self.agent.finalize_response(task_id).response
            await self.agent.arun_step(task_id)
        raise StepError(
            f"service {self.service_name} ran {self.max_steps} steps of task {task_id} "
            "without reaching its last",
            hint="raise AgentService(max_steps=...) or open the task in the app to see why",
            task_id=task_id,
        )
