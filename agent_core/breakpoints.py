"""Breakpoints for `run_until`: predicates checked before each step runs.

A breakpoint is any callable `(state, next_step) -> str | None`: it returns why it stops the
run, or None to let the step run. The ones here cover the UI's choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from agent_core.types import StepKind, TaskState, TaskStep, TaskStepOutput

__all__ = [
    "AtStep",
    "Breakpoint",
    "CostOver",
    "OnTool",
    "RunUntilResult",
    "StopReason",
    "TokensOver",
]

StopReason = Literal["last_step", "tool_approval", "error", "breakpoint", "max_steps", "no_step"]


class Breakpoint(Protocol):
    """Decides, before a step runs, whether `run_until` stops there."""

    def __call__(self, state: TaskState, next_step: TaskStep) -> str | None:
        """Why the run stops before `next_step`, or None to go on."""
        ...


def _tool_of(step: TaskStep) -> str | None:
    if step.kind is StepKind.TOOL and isinstance(step.input, dict):
        name = step.input.get("tool")
        return name if isinstance(name, str) else None
    return None


@dataclass(frozen=True)
class OnTool:
    """Stop before a tool step (any tool, or only `name`), and after a step that called it."""

    name: str | None = None

    def __call__(self, state: TaskState, next_step: TaskStep) -> str | None:
        """Stop at a matching tool step, or right after a step whose calls matched."""
        tool = _tool_of(next_step)
        if tool is not None and self.name in (None, tool):
            return f"breakpoint: before tool step {tool!r}"
        last = state.last_output
        if last is not None and last.task_step.kind is not StepKind.TOOL:
            for call in last.tool_calls:
                if self.name in (None, call.tool_name):
                    return f"breakpoint: step {last.task_step.number} called {call.tool_name!r}"
        return None


@dataclass(frozen=True)
class AtStep:
    """Stop once the task has completed `number` steps."""

    number: int

    def __call__(self, state: TaskState, next_step: TaskStep) -> str | None:
        """Stop when the completed-step count has reached `number`."""
        if len(state.completed) >= self.number:
            return f"breakpoint: reached step {self.number}"
        return None


@dataclass(frozen=True)
class CostOver:
    """Stop once the task's known cost exceeds `usd`."""

    usd: float

    def __call__(self, state: TaskState, next_step: TaskStep) -> str | None:
        """Stop when the task's cost so far is over the limit."""
        cost = state.task.usage.cost_usd
        if cost is not None and cost > self.usd:
            return f"breakpoint: cost ${cost:.4f} is over ${self.usd:.4f}"
        return None


@dataclass(frozen=True)
class TokensOver:
    """Stop once the task has used more than `tokens` tokens."""

    tokens: int

    def __call__(self, state: TaskState, next_step: TaskStep) -> str | None:
        """Stop when the task's token count so far is over the limit."""
        used = state.task.usage.total_tokens
        if used > self.tokens:
            return f"breakpoint: {used} tokens is over {self.tokens}"
        return None


class RunUntilResult(BaseModel):
    """What a `run_until` call ran and why it stopped."""

    outputs: list[TaskStepOutput] = Field(default_factory=list)
    reason: StopReason
    detail: str = ""

    @property
    def is_last(self) -> bool:
        """Whether the task reached its last step (ready to finalize)."""
        return self.reason == "last_step"
