"""LlamaIndex's `handle_reasoning_failure_fn`: an answer in place of a failed task.

LlamaIndex calls it when a ReAct agent reaches `max_iterations`; what it returns is the
answer. Without one, Stepwise fails the step (typed, retryable), as it always has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_core.errors import StepError
from agent_core.llms.base import ChatMessage
from agent_core.types import Task, TaskStep, TaskStepOutput

__all__ = ["FailureHandler", "failure_answer", "iterations_used"]

FailureHandler = Callable[[Any, Exception], Any]
"""`fn(callback_manager, error)`: LlamaIndex's signature; the manager is always None here."""


def iterations_used(task: Task) -> int:
    """How many reasoning steps the task has run."""
    return int(task.extra_state.get("iterations", 0))


def failure_answer(
    handler: FailureHandler, max_iterations: int, step: TaskStep, task: Task
) -> TaskStepOutput:
    """The last step of a task that reached `max_iterations`: the `handler`'s answer."""
    error = StepError(
        f"the agent reached max_iterations={max_iterations}",
        code="max_iterations",
        params={"limit": max_iterations},
    )
    result = handler(None, error)
    answer = str(getattr(result, "content", result))
    # Written as a ReAct answer, so that finalize puts it into the conversation like any.
    task.memory.put(ChatMessage(role="assistant", content=f"Answer: {answer}"))
    return TaskStepOutput(output=answer, task_step=step, is_last=True, thought=str(error))
