"""The runtime's hooks into OpenTelemetry: one cheap check each while tracing is off.

The runner, the model call and the tool call each carry one hook from here. While tracing is
off, a hook reads one module global and hands back the wrapped function's own coroutine (no
coroutine of its own: about 0.25 µs a call); OpenTelemetry is not even imported. The first
hook to run reads `STEPWISE_OTLP_ENDPOINT` once and turns tracing on when it is set;
`agent_core.telemetry.instrument` turns it on explicitly.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from agent_core.telemetry.spans import Tracing
    from agent_core.types import TaskState, TaskStep

__all__ = [
    "ENDPOINT_ENV",
    "active",
    "task_deleted",
    "task_event",
    "traced_chat",
    "traced_step",
    "traced_tool_call",
]

ENDPOINT_ENV = "STEPWISE_OTLP_ENDPOINT"

T = TypeVar("T")
Async = Callable[..., Coroutine[Any, Any, T]]


class _Unresolved:
    """Tracing not decided yet: the environment has not been read."""


UNRESOLVED = _Unresolved()
tracing: Tracing | _Unresolved | None = UNRESOLVED
"""The one global every hook checks: None is off."""

_resolving = threading.Lock()


def active() -> Tracing | None:
    """The tracing in force, reading `STEPWISE_OTLP_ENDPOINT` the first time it is needed."""
    current = tracing
    if isinstance(current, _Unresolved):
        return _from_environment()
    return current


def _from_environment() -> Tracing | None:
    global tracing
    with _resolving:
        if isinstance(tracing, _Unresolved):
            endpoint = os.environ.get(ENDPOINT_ENV, "").strip()
            if endpoint:
                from agent_core.extras import require

                require("otel", feature=f"tracing (${ENDPOINT_ENV} is set)")
                from agent_core.telemetry.spans import Tracing

                tracing = Tracing.for_endpoint(endpoint)
            else:
                tracing = None
        return tracing


def traced_step(work: Async[T]) -> Async[T]:
    """Wrap `run_claimed(runner, state, step, kwargs, run)` in a step span when tracing is on."""

    @functools.wraps(work)
    def run(runner: Any, state: TaskState, step: TaskStep, *args: Any) -> Coroutine[Any, Any, T]:
        on = tracing
        if on is None or (isinstance(on, _Unresolved) and (on := active()) is None):
            return work(runner, state, step, *args)
        return on.step(work, runner, state, step, *args)

    return run


def traced_chat(chat: Async[T]) -> Async[T]:
    """Wrap a step's model call `(llm, messages, step, emit, *, tools)` in an LLM span."""

    @functools.wraps(chat)
    def call(*args: Any, **kwargs: Any) -> Coroutine[Any, Any, T]:
        on = tracing
        if on is None or (isinstance(on, _Unresolved) and (on := active()) is None):
            return chat(*args, **kwargs)
        return on.chat(chat, *args, **kwargs)

    return call


def traced_tool_call(call_tool: Async[T]) -> Async[T]:
    """Wrap one tool call `(tool, args, *, step_id, emit, call_id)` in a tool span."""

    @functools.wraps(call_tool)
    def call(*args: Any, **kwargs: Any) -> Coroutine[Any, Any, T]:
        on = tracing
        if on is None or (isinstance(on, _Unresolved) and (on := active()) is None):
            return call_tool(*args, **kwargs)
        return on.tool_call(call_tool, *args, **kwargs)

    return call


def task_event(
    state: TaskState,
    name: str,
    *,
    step: TaskStep | None = None,
    text: str | None = None,
    end: bool = False,
) -> None:
    """Record `name` (undo, feedback, abandon, finalize) on the task's span; `end` closes it."""
    on = active()
    if on is not None:
        on.task_event(state, name, step=step, text=text, end=end)


def task_deleted(task_id: str) -> None:
    """Close the task's span, if this process has one open."""
    on = tracing
    if on is not None and not isinstance(on, _Unresolved):
        on.task_deleted(task_id)
