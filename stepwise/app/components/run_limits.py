"""A task's run limits on the page: what it used of each bound, and the Limits button.

The bounds are the runtime's (`agent_core.types.RunLimits`): reasoning steps (the worker's
`max_iterations` unless the person raised it), tokens and dollars. A task a bound stopped
goes on once the bound is raised (`AgentRunner.set_limits`) and the failed step runs again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from agent_core import ParallelAgentRunner
from agent_core.spec import AgentSpec
from agent_core.types import StepKind, TaskState, TaskStatus
from stepwise.app.components import task_version
from stepwise.app.components.messages import cost_text, plural
from stepwise.app.components.task_origin import framework_of_task

__all__ = ["Limits", "limits_of", "limits_text", "render_limits_button"]

_NO_BOUND = "no bound"


@dataclass(frozen=True)
class Limits:
    """One task's bounds and what it used of them (None: no such bound)."""

    iterations_used: int | None
    """Reasoning steps taken (None: the agent does not count them, a framework's say)."""
    max_iterations: int | None
    tokens_used: int
    max_tokens: int | None
    cost_used: float | None
    max_cost_usd: float | None
    unit: str = "reasoning step"
    """What `max_iterations` counts: a framework counts its own (model requests, turns)."""
    setting: str = ""
    """The framework's own name for the bound ("pydantic-ai's request_limit"), if any."""


_COUNTING_WORKERS = ("react", "multimodal_react", "function_calling")
"""The built-in workers that count reasoning steps against `max_iterations`."""

_FRAMEWORK_BOUNDS = {
    # The framework's own bound, which the task's `max_iterations` replaces (the adapters
    # apply it), with its default; one model step of the task is one of what it counts.
    "pydantic-ai": ("model request", 50, "pydantic-ai's request_limit"),
    "OpenAI Agents SDK": ("turn", 10, "the Agents SDK's max_turns"),
}


def _worker_bound(runner: ParallelAgentRunner, spec: AgentSpec) -> int | None:
    """The reasoning-step bound the task's agent has of its own (None: it has none)."""
    if spec.agent is None:  # The spec builds the worker with its max_iterations.
        return spec.max_iterations if spec.worker in _COUNTING_WORKERS else None
    bound = getattr(runner.agent_worker, "max_iterations", None)  # A worker of the user's.
    return bound if isinstance(bound, int) and not isinstance(bound, bool) else None


def limits_of(task_state: TaskState, runner: ParallelAgentRunner, spec: AgentSpec) -> Limits:
    """The task's bounds: the person's where set, else its agent's own."""
    task = task_state.task
    own = task.limits
    bound, used, unit, setting = _steps_bound(task_state, runner, spec)
    counted = isinstance(used, int) and not isinstance(used, bool)
    return Limits(
        iterations_used=used if counted else (0 if bound is not None else None),
        max_iterations=bound,
        unit=unit,
        setting=setting,
        tokens_used=task.usage.total_tokens,
        max_tokens=own.max_tokens,
        cost_used=task.usage.cost_usd,  # $0 for the demo model and typed replies.
        max_cost_usd=own.max_cost_usd,
    )


def _steps_bound(
    task_state: TaskState, runner: ParallelAgentRunner, spec: AgentSpec
) -> tuple[int | None, Any, str, str]:
    """The bound on the task's steps, what it used, what it counts, and a framework's name."""
    task = task_state.task
    own = task.limits.max_iterations
    framework = framework_of_task(task)
    if task.imported or (framework and framework not in _FRAMEWORK_BOUNDS):
        return None, None, "reasoning step", ""  # Nothing of it counts against a bound.
    if framework:
        unit, default, setting = _FRAMEWORK_BOUNDS[framework]
        bound = own or getattr(runner.agent_worker, "max_turns", default)
        used = sum(task_state.steps[s].kind is StepKind.LLM for s in task_state.completed)
        return bound, used, unit, setting
    bound = own if own is not None else _worker_bound(runner, spec)
    return bound, task.extra_state.get("iterations"), "reasoning step", ""


def limits_text(limits: Limits) -> str:
    """The bounds in one line: "Limits: 10 / 10 reasoning steps · 1,204 tokens (no bound)..."."""
    parts = []
    if limits.max_iterations is not None and limits.iterations_used is not None:
        steps = plural(limits.max_iterations, limits.unit)
        parts.append(f"{limits.iterations_used:,} / {steps}")
    tokens = plural(limits.tokens_used, "token")
    bound = f"{limits.max_tokens:,}" if limits.max_tokens is not None else _NO_BOUND
    parts.append(
        f"{tokens} of {bound}" if limits.max_tokens is not None else f"{tokens} (no bound)"
    )
    cost = cost_text(limits.cost_used)
    if limits.max_cost_usd is not None:
        parts.append(f"{cost} of ${limits.max_cost_usd:,.2f}")
    else:
        parts.append(f"{cost} ({_NO_BOUND})")
    return "Limits: " + " · ".join(parts)


_ITERATIONS, _TOKENS, _COST = "limits-iterations", "limits-tokens", "limits-cost"


def _on_save(runner: ParallelAgentRunner, task_id: str, limits: Limits) -> None:
    wanted: dict[str, Any] = {
        "max_tokens": _whole(st.session_state.get(_TOKENS)),
        "max_cost_usd": _dollars(st.session_state.get(_COST)),
    }
    if limits.max_iterations is not None:
        wanted["max_iterations"] = _whole(st.session_state.get(_ITERATIONS))

    def save() -> None:
        runner.set_limits(task_id, **wanted)

    task_version.act(runner, task_id, save, success="Limits saved.", where="controls")


def _whole(value: Any) -> int | None:
    return None if value is None else int(value)


def _dollars(value: Any) -> float | None:
    return None if value is None or float(value) <= 0 else float(value)


def render_limits_button(
    runner: ParallelAgentRunner, task_state: TaskState, limits: Limits, *, why_not: str
) -> None:
    """The Limits popover: raise (or lower) the task's bounds; `why_not` disables it."""
    task = task_state.task
    with st.popover(
        "Limits",
        key="limits",
        disabled=bool(why_not),
        help=why_not
        or "The task's bounds: reasoning steps, tokens and dollars. Raise one "
        "the task reached, then press Run step again.",
    ):
        st.caption(limits_text(limits))
        with st.form("limits-form", border=False):
            if limits.max_iterations is not None:
                st.number_input(
                    f"{limits.unit.capitalize()}s the task may take",
                    min_value=1,
                    max_value=100_000,
                    value=limits.max_iterations,
                    step=5,
                    key=_ITERATIONS,
                    help=f"This task's {limits.setting}." if limits.setting else None,
                )
            st.number_input(
                "Tokens the task may spend",
                min_value=1,
                value=limits.max_tokens,
                step=1000,
                placeholder=_NO_BOUND,
                key=_TOKENS,
                help="Empty: no bound. Counts prompt and reply tokens of completed steps.",
            )
            st.number_input(
                "Dollars the task may spend",
                min_value=0.0,
                value=limits.max_cost_usd,
                step=0.5,
                format="%.2f",
                placeholder=_NO_BOUND,
                key=_COST,
                help="Empty: no bound. Counts steps whose model has a price.",
            )
            st.form_submit_button(
                "Save limits",
                type="primary",
                disabled=task.status not in (TaskStatus.ACTIVE, TaskStatus.FAILED),
                on_click=_on_save,
                args=(runner, task.task_id, limits),
            )
