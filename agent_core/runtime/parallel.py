"""`ParallelAgentRunner`: run every ready step of a task at once (asyncio, bounded).

A step is ready when every step it `depends_on` has completed. Steps commit as they finish,
each in its own transaction, so a failure in one leaves the others' results stored.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent_core.errors import StepError, UserError
from agent_core.runtime.contracts import AgentWorker
from agent_core.runtime.loop import run_sync, runs_on_runtime
from agent_core.runtime.queue import is_claimable, nothing_to_run
from agent_core.runtime.runner import AgentRunner
from agent_core.types import TaskStepOutput

__all__ = ["DEFAULT_MAX_CONCURRENCY", "ParallelAgentRunner"]

DEFAULT_MAX_CONCURRENCY = 8


class ParallelAgentRunner(AgentRunner):
    """An `AgentRunner` that can also run all ready steps concurrently.

    Args:
        agent_worker: The step logic.
        max_concurrency: How many steps may run at the same time.
        **kwargs: As for `AgentRunner` (store, memory, ...).
    """

    def __init__(
        self,
        agent_worker: AgentWorker,
        *,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        **kwargs: Any,
    ) -> None:
        super().__init__(agent_worker, **kwargs)
        if max_concurrency < 1:
            raise UserError(f"max_concurrency must be at least 1, got {max_concurrency}")
        self.max_concurrency = max_concurrency

    def _ready_step_ids(self, task_id: str) -> list[str]:
        state = self._active_state(task_id)
        ready = [
            step_id
            for step_id in state.queue
            if state.is_ready(state.steps[step_id]) and is_claimable(state.steps[step_id])
        ]
        if not ready:
            raise nothing_to_run(state)
        return ready

    @runs_on_runtime
    async def arun_steps_in_queue(
        self, task_id: str, *, max_concurrency: int | None = None
    ) -> list[TaskStepOutput]:
        """Run every step that is ready now, concurrently; return their outputs in queue order.

        Steps that become ready because of these wait for the next call. If any step fails,
        the others still complete and commit, then `StepError` names the failures.
        """
        limit = asyncio.Semaphore(max_concurrency or self.max_concurrency)

        async def run_one(step_id: str) -> TaskStepOutput:
            async with limit:
                return await self.arun_step(task_id, step_id=step_id)

        step_ids = self._ready_step_ids(task_id)
        results = await asyncio.gather(*map(run_one, step_ids), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        for failure in failures:
            if not isinstance(failure, Exception):
                raise failure  # Cancellation and the like are not step failures.
        if failures:
            done = len(results) - len(failures)
            raise StepError(
                f"{len(failures)} of {len(results)} steps failed ({done} completed and were "
                "kept): " + "; ".join(str(f) for f in failures),
                task_id=task_id,
            )
        return [r for r in results if isinstance(r, TaskStepOutput)]

    def run_steps_in_queue(
        self, task_id: str, *, max_concurrency: int | None = None
    ) -> list[TaskStepOutput]:
        """Sync twin of `arun_steps_in_queue`."""
        coro = self.arun_steps_in_queue(task_id, max_concurrency=max_concurrency)
        return run_sync(coro, name="run_steps_in_queue")
