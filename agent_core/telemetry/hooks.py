"""The runtime's hooks into OpenTelemetry: one cheap check each while tracing is off.

The runner, the model call and the tool call each carry one hook from here. While tracing is
off, a hook reads one module global and hands back the wrapped function's own coroutine (no
coroutine of its own: about 0.25 µs a call); OpenTelemetry is not even imported. The first
hook to run reads `STEPWISE_OTLP_ENDPOINT` once and turns tracing on when it is set;
`agent_core.telemetry.instrument` turns it on explicitly.

Observers (`add_observer`) are told of each step and chat as it happens, on the runtime loop:
LlamaIndex's instrumentation dispatcher (`agent_core.compat.llamaindex.instrumentation`)
listens here. With none, the runner pays one test of a tuple per step.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agent_core.errors import UserError

if TYPE_CHECKING:
    from agent_core.telemetry.spans import Tracing
    from agent_core.types import StepInput, TaskState, TaskStep, TaskStepOutput

__all__ = [
    "ENDPOINT_ENV",
    "RunObserver",
    "active",
    "add_observer",
    "chat_ended",
    "chat_started",
    "check_endpoint_setting",
    "observers",
    "step_ended",
    "step_started",
    "step_undone",
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

                try:
                    tracing = Tracing.for_endpoint(endpoint)
                except ValueError as exc:  # Tracing never fails a step: run untraced, say why.
                    logging.getLogger(__name__).error("$%s: %s; tracing is off", ENDPOINT_ENV, exc)
                    tracing = None
            else:
                tracing = None
        return tracing


def check_endpoint_setting() -> None:
    """Raise `UserError` if `$STEPWISE_OTLP_ENDPOINT` is set to what is not an http(s) URL.

    The faces call it at start, so the mistake is said at once; a step never fails over it
    (the runtime logs it and runs untraced).
    """
    endpoint = os.environ.get(ENDPOINT_ENV, "").strip()
    if endpoint and not endpoint.startswith(("http://", "https://")):
        raise UserError(
            f"${ENDPOINT_ENV} must be an http:// or https:// URL, got {endpoint!r} "
            "(e.g. http://localhost:6006 for Phoenix)",
            hint=f"fix ${ENDPOINT_ENV}, or unset it to run without tracing",
            code="bad_request",
        )


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
    """Record committed `name` (undo, feedback, skip, abandon, finalize) in the task's trace.

    `end` (finalize, abandon) sends the task's summary.
    """
    on = active()
    if on is not None:
        on.task_event(state, name, step=step, text=text, end=end)


def step_undone(state: TaskState, step: TaskStep, change: object) -> None:
    """Note `step` undone by `change` (not committed yet); `task_event("step_undone")` tells."""
    on = active()
    if on is not None:
        on.step_undone(state, step, change)


def task_deleted(task_id: str) -> None:
    """Close the task's span, if this process has one open."""
    on = tracing
    if on is not None and not isinstance(on, _Unresolved):
        on.task_deleted(task_id)


# ------------------------------------------------------------------ observers

logger = logging.getLogger(__name__)


class RunObserver(Protocol):
    """Told of each step and chat a runner runs, on the runtime loop, as it happens."""

    def step_started(self, task_id: str, step: TaskStep, input: StepInput) -> None:
        """A claimed step is about to run; `input` is what its caller gave (None: none)."""
        ...

    def step_ended(self, output: TaskStepOutput) -> None:
        """A step completed (a step that fails or is stopped sends nothing)."""
        ...

    def chat_started(self, message: str) -> None:
        """`chat` / `stream_chat` was called with `message`."""
        ...

    def chat_ended(self, response: Any) -> None:
        """`chat` returned `response` (`stream_chat`: its stream, before it is read)."""
        ...


observers: tuple[RunObserver, ...] = ()
"""Every observer; the runner tests it before each report, so an empty one costs nothing."""

_observers_guard = threading.Lock()


def add_observer(observer: RunObserver) -> Callable[[], None]:
    """Tell `observer` of every step and chat from now on; returns what stops that."""
    global observers
    with _observers_guard:
        observers = (*observers, observer)

    def remove() -> None:
        global observers
        with _observers_guard:
            observers = tuple(o for o in observers if o is not observer)

    return remove


def _tell(report: Callable[[RunObserver], None]) -> None:
    for observer in observers:
        try:
            report(observer)
        except Exception:  # An observer's bug must not fail, or strand, the step it watches.
            logger.exception("run observer %r failed", observer)


def step_started(task_id: str, step: TaskStep, input: StepInput) -> None:
    """Tell every observer a step starts."""
    _tell(lambda o: o.step_started(task_id, step, input))


def step_ended(output: TaskStepOutput) -> None:
    """Tell every observer a step completed."""
    _tell(lambda o: o.step_ended(output))


def chat_started(message: str) -> None:
    """Tell every observer a chat starts."""
    _tell(lambda o: o.chat_started(message))


def chat_ended(response: Any) -> None:
    """Tell every observer a chat ended."""
    _tell(lambda o: o.chat_ended(response))
