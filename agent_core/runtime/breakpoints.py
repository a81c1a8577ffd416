"""Breakpoints for `run_until`: predicates checked before each step runs.

A breakpoint is any callable `(state, next_step) -> str | None`: it returns why it stops the
run, or None to let the step run. The ones here cover the UI's choices.

A tool breakpoint must stop before the call, but a ReAct or function-calling step both
reasons and acts. So a breakpoint may also hold calls (`holds_tool`): `run_until` hands that
test to the worker, which then proposes a matching call as its own `tool` step instead of
running it, and the run stops before that step, where the call can be edited or rejected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from agent_core.types import StepKind, TaskState, TaskStep, TaskStepOutput

__all__ = [
    "HOLD_TOOL",
    "AtStep",
    "Breakpoint",
    "CostOver",
    "OnNode",
    "OnTool",
    "RunUntilResult",
    "StopReason",
    "TokensOver",
    "tool_hold",
]

HOLD_TOOL = "hold_tool"
"""The `arun_step` keyword holding the tool-breakpoint test, `(tool name) -> bool`."""

StopReason = Literal[
    "last_step", "tool_approval", "question", "error", "breakpoint", "max_steps", "no_step"
]
"""Why `run_until` stopped; "question": the agent asks a person something (a human step
awaiting an answer, `TaskStep.awaits_answer`)."""


class Breakpoint(Protocol):
    """Decides, before a step runs, whether `run_until` stops there."""

    def __call__(self, state: TaskState, next_step: TaskStep) -> str | None:
        """Why the run stops before `next_step`, or None to go on."""
        ...


def _tools_of(step: TaskStep) -> list[str]:
    """The tools a queued tool step calls: its one call, or each of a batch's `calls`."""
    if step.kind is not StepKind.TOOL or not isinstance(step.input, dict):
        return []
    calls = step.input.get("calls")
    batch = calls if isinstance(calls, list) else [step.input]
    return [c["tool"] for c in batch if isinstance(c, dict) and isinstance(c.get("tool"), str)]


@dataclass(frozen=True)
class OnTool:
    """Stop before a call of any tool, or only of the tool `name`, runs."""

    name: str | None = None

    def holds_tool(self, tool: str) -> bool:
        """Whether a call of `tool` must wait as its own step (not run inside a reasoning step)."""
        return self.name in (None, tool)

    def __call__(self, state: TaskState, next_step: TaskStep) -> str | None:
        """Stop at a matching tool step.

        A worker that runs tools inside its steps and cannot hold them (a custom one) is
        stopped right after a step whose calls matched: as early as it allows.
        """
        tool = next((t for t in _tools_of(next_step) if self.holds_tool(t)), None)
        if tool is not None:
            return f"breakpoint: before tool step {tool!r}"
        last = state.last_output
        if last is not None and last.task_step.kind is not StepKind.TOOL:
            for call in last.tool_calls:
                if not call.is_error and self.holds_tool(call.tool_name):
                    return f"breakpoint: step {last.task_step.number} called {call.tool_name!r}"
        return None


def nodes_of(step: TaskStep) -> list[str]:
    """The graph nodes a step runs, as a graph adapter names them in `step_state["nodes"]`."""
    nodes = step.step_state.get("nodes")
    return [n for n in nodes if isinstance(n, str)] if isinstance(nodes, list) else []


@dataclass(frozen=True)
class OnNode:
    """Stop before a step that runs the graph node `name` (LangGraph's Studio breakpoint).

    A graph adapter names the node(s) each upcoming step runs in its `step_state["nodes"]`;
    a step of another worker names none, so this never stops it.
    """

    name: str

    def __call__(self, state: TaskState, next_step: TaskStep) -> str | None:
        """Stop when `next_step` runs the node."""
        if self.name in nodes_of(next_step):
            return f"breakpoint: before node {self.name!r}"
        return None


@dataclass(frozen=True)
class AtStep:
    """Stop when the task has completed exactly `number` steps (a later run goes past it)."""

    number: int

    def __call__(self, state: TaskState, next_step: TaskStep) -> str | None:
        """Stop when the completed-step count is `number`."""
        if len(state.completed) == self.number:
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


def tool_hold(breakpoints: Sequence[Breakpoint]) -> dict[str, Any]:
    """The `arun_step` keywords that make a worker hold the calls `breakpoints` stop before."""
    holds: list[Callable[[str], object]] = [
        hold for bp in breakpoints if callable(hold := getattr(bp, "holds_tool", None))
    ]
    if not holds:
        return {}
    return {HOLD_TOOL: lambda tool: any(hold(tool) for hold in holds)}


class RunUntilResult(BaseModel):
    """What a `run_until` call ran and why it stopped."""

    outputs: list[TaskStepOutput] = Field(default_factory=list)
    reason: StopReason
    detail: str = ""
    error: dict[str, Any] | None = None
    """The error that stopped it (`reason` "error"), as data (`AgentCoreError.to_data`)."""

    @property
    def is_last(self) -> bool:
        """Whether the task reached its last step (ready to finalize)."""
        return self.reason == "last_step"
