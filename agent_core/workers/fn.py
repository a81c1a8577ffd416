"""`FnAgentWorker`: an agent whose every step is one call of your function over a state dict.

LlamaIndex's class of the same name: `fn(state) -> (state, is_done)`, sync or async. The state
starts as `initial_state`; each call also finds the task under `"__task__"`, and the step's
output is what it leaves under `"__output__"`. The state is stored (as JSON, `"__task__"`
left out), snapshotted and undone like any worker's.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from agent_core.errors import UserError
from agent_core.types import StepKind, Task, TaskStep, TaskStepOutput
from agent_core.workers.base import BaseAgentWorker

__all__ = ["FnAgentWorker"]

StateFn = Callable[[dict[str, Any]], tuple[dict[str, Any], bool]]
AsyncStateFn = Callable[[dict[str, Any]], Awaitable[tuple[dict[str, Any], bool]]]

_STATE_KEY = "fn_state"
TASK_KEY = "__task__"
OUTPUT_KEY = "__output__"


def _check_takes_state(fn: Callable[..., Any]) -> None:
    if "state" not in inspect.signature(fn).parameters:
        raise UserError(
            f"FnAgentWorker's fn must take a 'state' parameter; "
            f"{getattr(fn, '__name__', fn)!r} takes none",
            hint="write it as fn(state: dict) -> (state, is_done)",
        )


class FnAgentWorker(BaseAgentWorker):
    """Runs `fn(state)` once per step until it says the task is done.

    Args:
        fn: `fn(state) -> (state, is_done)`; may be async.
        async_fn: An async version used instead of `fn` where given.
        initial_state: The state each task starts with (JSON values).
    """

    def __init__(
        self,
        fn: StateFn | AsyncStateFn,
        async_fn: AsyncStateFn | None = None,
        initial_state: dict[str, Any] | None = None,
    ) -> None:
        _check_takes_state(fn)
        if async_fn is not None:
            _check_takes_state(async_fn)
        self.fn, self.async_fn = fn, async_fn
        self.initial_state = dict(initial_state or {})

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        """Start the task's state from `initial_state`; the first step gets the task's input."""
        task.extra_state[_STATE_KEY] = dict(self.initial_state)
        return TaskStep(task_id=task.task_id, input=task.input, kind=StepKind.CUSTOM)

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        """Call the function once; queue another step unless it says it is done."""
        state = {**task.extra_state.get(_STATE_KEY, {}), TASK_KEY: task}
        state, is_done = await self._call(state)
        state.pop(TASK_KEY, None)  # The live task is handed in each call, never stored.
        task.extra_state[_STATE_KEY] = state
        return TaskStepOutput(
            output=state.get(OUTPUT_KEY),
            task_step=step,
            is_last=is_done,
            next_steps=[] if is_done else [step.get_next_step(kind=StepKind.CUSTOM)],
        )

    async def _call(self, state: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        if self.async_fn is not None:
            return await self.async_fn(state)
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(state)
        # A user's function may block: off the runtime loop, like a sync tool.
        result = await asyncio.to_thread(self.fn, state)
        return await result if inspect.isawaitable(result) else result  # type: ignore[return-value]
