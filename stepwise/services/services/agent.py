"""`AgentService`: a Stepwise agent as a service; each hop it gets is a Stepwise task.

The hop's Stepwise task lives in the runner's store, so it can be opened, stepped, undone
and inspected in the app like any other. Delivery is at least once, and the service keeps
a ledger in that same store (its task ledger, `agent_core.store.ledger`), keyed by the
NEW_TASK message's id: a redelivered message whose hop finished republishes the recorded
result without running the agent again, and one whose hop had started resumes its Stepwise
task where it stopped. The ledger entry is written in the transaction that creates the
task, so a crash cannot leave a task that no redelivery would find; it is trimmed after each
hop (`LEDGER_KEEP_FINISHED`, `LEDGER_MAX_ENTRIES`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from agent_core.errors import ConflictError, StepError, UserError
from agent_core.runtime.runner import AgentRunner
from agent_core.spec import AgentSpec, ProviderName
from agent_core.store.base import Store
from agent_core.store.ledger import TaskLedger
from agent_core.types import TaskStatus, utcnow
from agent_core.user_code import UserCodeRegistry, default_registry
from stepwise.services.message_queues.base import BaseMessageQueue
from stepwise.services.messages import ActionTypes, QueueMessage
from stepwise.services.records import ServiceKind
from stepwise.services.services.base import BaseService, HopRequest, ignore

__all__ = ["LEDGER_KEEP_FINISHED", "LEDGER_MAX_ENTRIES", "AgentService", "ledger_key"]

LEDGER_KEEP_FINISHED = timedelta(days=1)
"""How long a finished hop's entry stays: far past any redelivery (a queue redelivers within
`max_deliveries` visibility timeouts, seconds to minutes)."""

LEDGER_MAX_ENTRIES = 10_000
"""The most entries the ledger keeps, finished or not; past it the oldest go (a hop that old,
never finished, is not coming back). About 1 MB of SQLite at most."""


def ledger_key(service_name: str, message_id: str) -> str:
    """The key of a NEW_TASK message's hop in the ledger of the service that runs it."""
    return f"{service_name}:{message_id}"


class AgentService(BaseService):
    """Runs each NEW_TASK it receives as a task of `agent`, to the end, and returns the answer.

    Args:
        agent: The Stepwise runner (any worker, the user's own included). Give it a
            `SQLiteStore` to see the service's tasks in the app. Its shared conversation
            (`conversation_id`) carries over between hops; pass `conversation_id=None` for
            hops that start afresh. Its store keeps the service's hop ledger too (a
            `TaskLedger`, as `SQLiteStore` and `InMemoryStore` are).
        message_queue: The queue.
        description: What the agent is useful for (the orchestrator's LLM reads it).
        service_name: Its name.
        max_steps: Steps one hop may take before it fails (and is delivered again).
        **kwargs: `host`, `port`, `num_workers` (see `BaseService`).

    Raises:
        UserError: The agent's store keeps no task ledger.
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
        if not isinstance(agent.store, TaskLedger):
            raise UserError(
                f"AgentService {service_name!r} keeps its hop ledger in the agent's store, and "
                f"{type(agent.store).__name__} keeps none",
                hint="give the runner a SQLiteStore or an InMemoryStore, or add the methods of "
                "agent_core.store.TaskLedger to your store",
            )
        super().__init__(
            message_queue, service_name=service_name, description=description, **kwargs
        )
        self.agent = agent
        self.ledger: TaskLedger = agent.store
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
        registry: UserCodeRegistry | None = None,
        **kwargs: Any,
    ) -> AgentService:
        """A service over the user's own agent (`file.py:attr` or `package.module:attr`).

        The agent is built as the app builds it (`AgentSpec`), so its tasks record the
        target and can be rebuilt and stepped in the app. `registry` imports it (default:
        the working folder's, `default_registry()`).

        Raises:
            UserCodeError: The agent failed to import or build (with the user's traceback).
        """
        spec = AgentSpec(
            name=service_name, agent=service_name, agent_target=target, provider=provider,
            model=model,
        )  # fmt: skip
        runner = spec.build_runner(store=store, registry=registry or default_registry())
        return cls(
            runner, message_queue, service_name=service_name, description=description, **kwargs
        )

    async def process_message(self, message: QueueMessage) -> None:
        """Run a NEW_TASK's hop (once per message id) and publish its result."""
        if message.action is not ActionTypes.NEW_TASK:
            ignore(self, message)
            return
        request = HopRequest.model_validate(message.data)
        key = ledger_key(self.service_name, message.id_)
        entry = self.ledger.ledger_entry(key)
        if entry is not None and entry.result is not None:
            task_id, result = entry.task_id, entry.result
        else:
            task_id = entry.task_id if entry is not None else self._start(request, key)
            result = await self._run_to_end(task_id)
            self.ledger.finish_ledger_entry(key, result)
            self.ledger.trim_ledger(
                finished_before=utcnow() - LEDGER_KEEP_FINISHED, keep_at_most=LEDGER_MAX_ENTRIES
            )
        await self.publish_result(request, result, data={"service_task_id": task_id})

    def _start(self, request: HopRequest, key: str) -> str:
        """Create the hop's task and its ledger entry, in one transaction."""
        try:
            return self.agent.create_task(request.input, ledger_key=key).task_id
        except ConflictError:
            entry = self.ledger.ledger_entry(key)  # Another replica started it meanwhile.
            if entry is None:
                raise
            return entry.task_id

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
