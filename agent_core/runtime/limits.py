"""A task's spending bounds, checked before each step it runs.

The reasoning-step bound lives with the workers (`max_iterations`, raised per task by
`Task.limits.max_iterations`); tokens and dollars are bounds on the task's completed steps,
checked here before another step may spend more.
"""

from __future__ import annotations

from agent_core.errors import UserError
from agent_core.types import RunLimits, TaskState, short_id

__all__ = ["check_spending", "iteration_limit"]


def iteration_limit(limits: RunLimits, worker_default: int) -> int:
    """The reasoning steps a task may take: the person's bound, else the worker's."""
    return limits.max_iterations if limits.max_iterations is not None else worker_default


def check_spending(state: TaskState) -> None:
    """Raise `UserError` (code `limit_reached`) if the task already spent a bound it has."""
    limits, usage = state.task.limits, state.task.usage
    if limits.max_tokens is not None and usage.total_tokens >= limits.max_tokens:
        _reached(state, "max_tokens", limits.max_tokens, usage.total_tokens, "tokens")
    cost = usage.cost_usd
    if limits.max_cost_usd is not None and cost is not None and cost >= limits.max_cost_usd:
        _reached(state, "max_cost_usd", limits.max_cost_usd, round(cost, 6), "dollars")


def _reached(state: TaskState, which: str, limit: float, used: float, unit: str) -> None:
    raise UserError(
        f"task {short_id(state.task_id)} has spent {used:,} {unit}, its bound {which}={limit:,}",
        hint="raise the task's limits (set_limits) to go on",
        remedy="raise_limits",
        task_id=state.task_id,
        code="limit_reached",
        params={"limit_name": which, "limit": limit, "used": used},
    )
