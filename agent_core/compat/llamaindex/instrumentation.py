"""LlamaIndex 0.12's instrumentation: dispatchers, their handlers, and the agent runner's events.

    import agent_core.compat.llamaindex.instrumentation as instrument

    dispatcher = instrument.get_dispatcher()        # the root
    dispatcher.add_event_handler(MyHandler())       # a BaseEventHandler
    agent.chat("...")   # AgentChatWithStepStart, then per step AgentRunStepStart/End, then
                        # AgentChatWithStepEnd reach MyHandler.handle, in that order

`get_dispatcher(__name__)` gives a module its own dispatcher; what it dispatches also reaches
the handlers of the dispatchers above it (by dotted name, else the root), as in LlamaIndex.
`@dispatcher.span` reports a function's calls to span handlers, and events dispatched inside
it carry its span id.

Every `AgentRunner` (and so `ReActAgent`, `FunctionCallingAgent`, ...) emits the agent events
from the `agent_core.runtime.runner` dispatcher, a child of the root. They are sent on the
runtime's thread while the step runs, so a handler should be quick; one that raises is logged
and the step goes on. Until a first event handler is added anywhere, the runner is not even
told to send them.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import threading
import uuid
from abc import abstractmethod
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from agent_core.runtime.streaming_response import StreamingAgentChatResponse
from agent_core.telemetry import hooks
from agent_core.types import AgentChatResponse, StepInput, TaskStep, TaskStepOutput

__all__ = [
    "AgentChatWithStepEndEvent",
    "AgentChatWithStepStartEvent",
    "AgentRunStepEndEvent",
    "AgentRunStepStartEvent",
    "BaseEvent",
    "BaseEventHandler",
    "BaseSpanHandler",
    "Dispatcher",
    "get_dispatcher",
]

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

active_span_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "stepwise_llamaindex_active_span_id", default=None
)
"""The span the running code is in (set by `Dispatcher.span`), stamped on each new event."""


_Dict = dict[str, Any]  # Named here: in BaseEvent's body its `dict` method hides the builtin.


class BaseEvent(BaseModel):
    """An event: when, a unique id, the span it happened in, and tags."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    timestamp: datetime = Field(default_factory=datetime.now)
    id_: str = Field(default_factory=lambda: str(uuid.uuid4()))
    span_id: str | None = Field(default_factory=active_span_id.get)
    tags: _Dict = Field(default_factory=dict)

    @classmethod
    def class_name(cls) -> str:
        """The event's name, as LlamaIndex's handlers read it."""
        return "BaseEvent"

    def dict(self, **kwargs: Any) -> _Dict:  # type: ignore[override]
        """LlamaIndex's spelling of `model_dump`."""
        return self.model_dump(**kwargs)

    def model_dump(self, **kwargs: Any) -> _Dict:
        """The fields, plus `class_name`."""
        return {**super().model_dump(**kwargs), "class_name": self.class_name()}


class BaseEventHandler(BaseModel):
    """Receives every event dispatched where it was added (and below, by propagation)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @classmethod
    def class_name(cls) -> str:
        """The handler's name."""
        return "BaseEventHandler"

    @abstractmethod
    def handle(self, event: BaseEvent, **kwargs: Any) -> Any:
        """Do something with `event`."""


class BaseSpanHandler(BaseModel):
    """Follows spans (`Dispatcher.span` calls): their start, their end or their failure.

    A subclass builds its span object in `new_span` (None: not followed), then gets it back
    in `prepare_to_exit_span` or `prepare_to_drop_span`; the spans are kept in
    `open_spans`, then `completed_spans` or `dropped_spans`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    open_spans: dict[str, Any] = Field(default_factory=dict)
    completed_spans: list[Any] = Field(default_factory=list)
    dropped_spans: list[Any] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        """The handler's name."""
        return "BaseSpanHandler"

    def span_enter(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any = None,
        parent_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A span started: ask `new_span` for its object and keep it open."""
        span = self.new_span(id_, bound_args, instance, parent_id, tags, **kwargs)
        if span is not None:
            self.open_spans[id_] = span

    def span_exit(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any = None,
        result: Any = None,
        **kwargs: Any,
    ) -> None:
        """A span returned `result`: close it with `prepare_to_exit_span`."""
        span = self.prepare_to_exit_span(id_, bound_args, instance, result, **kwargs)
        if self.open_spans.pop(id_, None) is not None and span is not None:
            self.completed_spans.append(span)

    def span_drop(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> None:
        """A span raised `err`: close it with `prepare_to_drop_span`."""
        span = self.prepare_to_drop_span(id_, bound_args, instance, err, **kwargs)
        if self.open_spans.pop(id_, None) is not None and span is not None:
            self.dropped_spans.append(span)

    @abstractmethod
    def new_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any = None,
        parent_span_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """The object that stands for a new span, or None not to follow it."""

    @abstractmethod
    def prepare_to_exit_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any = None,
        result: Any = None,
        **kwargs: Any,
    ) -> Any:
        """The span as it ended well, to keep in `completed_spans`."""

    @abstractmethod
    def prepare_to_drop_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> Any:
        """The span as it failed, to keep in `dropped_spans`."""


class Dispatcher:
    """Sends events to its event handlers and spans to its span handlers, then its parent's.

    Made by `get_dispatcher(name)`; `propagate=False` stops what it sends at itself (the
    root's default).
    """

    def __init__(
        self, name: str, *, parent: Dispatcher | None = None, propagate: bool = True
    ) -> None:
        self.name = name
        self.parent = parent
        self.propagate = propagate
        self.event_handlers: list[BaseEventHandler] = []
        self.span_handlers: list[BaseSpanHandler] = []

    def __repr__(self) -> str:
        return f"Dispatcher({self.name!r})"

    @property
    def log_name(self) -> str:
        """The name, under its parent's."""
        return f"{self.parent.name}.{self.name}" if self.parent is not None else self.name

    @property
    def current_span_id(self) -> str | None:
        """The span the calling code runs in, if any."""
        return active_span_id.get()

    def add_event_handler(self, handler: BaseEventHandler) -> None:
        """Send `handler` every event dispatched here or below."""
        _send_runner_events()
        # A new list, not an append: the runtime's thread may be iterating the old one.
        self.event_handlers = [*self.event_handlers, handler]

    def add_span_handler(self, handler: BaseSpanHandler) -> None:
        """Tell `handler` of every span entered here or below."""
        self.span_handlers = [*self.span_handlers, handler]

    def event(self, event: BaseEvent, **kwargs: Any) -> None:
        """Send `event` to each handler, here and up the chain; a failing handler is logged."""
        for dispatcher in self._chain():
            for handler in dispatcher.event_handlers:
                try:
                    handler.handle(event, **kwargs)
                except Exception:
                    logger.exception("%s failed on %s", type(handler).__name__, event.class_name())

    def span_enter(self, **kwargs: Any) -> None:
        """Tell each span handler a span started (`id_`, `bound_args`, `instance`, ...)."""
        self._to_span_handlers("span_enter", kwargs)

    def span_exit(self, **kwargs: Any) -> None:
        """Tell each span handler a span returned (`id_`, ..., `result`)."""
        self._to_span_handlers("span_exit", kwargs)

    def span_drop(self, **kwargs: Any) -> None:
        """Tell each span handler a span raised (`id_`, ..., `err`)."""
        self._to_span_handlers("span_drop", kwargs)

    def span(self, func: F) -> F:
        """Decorate `func` (sync or async) so each call is a span of this dispatcher."""
        if inspect.iscoroutinefunction(func):
            return self._async_span(func)
        signature = inspect.signature(func)
        method = _is_method(func, signature)

        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            call = _SpanCall(self, func, signature.bind(*args, **kwargs), method=method)
            try:
                result = func(*args, **kwargs)
            except BaseException as err:
                call.drop(err)
                raise
            else:
                call.exit(result)
                return result
            finally:
                call.leave()

        return run  # type: ignore[return-value]

    def _async_span(self, func: F) -> F:
        signature = inspect.signature(func)
        method = _is_method(func, signature)

        @functools.wraps(func)
        async def run(*args: Any, **kwargs: Any) -> Any:
            call = _SpanCall(self, func, signature.bind(*args, **kwargs), method=method)
            try:
                result = await func(*args, **kwargs)
            except BaseException as err:
                call.drop(err)
                raise
            else:
                call.exit(result)
                return result
            finally:
                call.leave()

        return run  # type: ignore[return-value]

    def _chain(self) -> list[Dispatcher]:
        chain: list[Dispatcher] = []
        current: Dispatcher | None = self
        while current is not None:
            chain.append(current)
            current = current.parent if current.propagate else None
        return chain

    def _to_span_handlers(self, method: str, kwargs: dict[str, Any]) -> None:
        for dispatcher in self._chain():
            for handler in dispatcher.span_handlers:
                try:
                    getattr(handler, method)(**kwargs)
                except Exception:
                    logger.exception("%s failed in %s", type(handler).__name__, method)


class _SpanCall:
    """One call of a function decorated with `Dispatcher.span`: its id, arguments and parent."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        func: Callable[..., Any],
        bound: inspect.BoundArguments,
        *,
        method: bool,
    ) -> None:
        # A method's span is named after the instance's class, as LlamaIndex names it.
        self.instance = bound.arguments.get("self") if method else None
        name = func.__qualname__
        if self.instance is not None:
            name = f"{type(self.instance).__name__}.{func.__name__}"
        self.id_ = f"{name}-{uuid.uuid4()}"
        self.dispatcher, self.bound = dispatcher, bound
        self.parent_id = active_span_id.get()
        self._token = active_span_id.set(self.id_)
        dispatcher.span_enter(
            id_=self.id_,
            bound_args=bound,
            instance=self.instance,
            parent_id=self.parent_id,
            tags={},
        )

    def leave(self) -> None:
        active_span_id.reset(self._token)

    def exit(self, result: Any) -> None:
        self.dispatcher.span_exit(
            id_=self.id_, bound_args=self.bound, instance=self.instance, result=result
        )

    def drop(self, err: BaseException) -> None:
        self.dispatcher.span_drop(
            id_=self.id_, bound_args=self.bound, instance=self.instance, err=err
        )


def _is_method(func: Callable[..., Any], signature: inspect.Signature) -> bool:
    # A decorator sees a method before it is bound: its first parameter is the sign.
    parameters = list(signature.parameters)
    return bool(parameters) and parameters[0] == "self" and "." in func.__qualname__


# ------------------------------------------------------------------ dispatchers by name

_ROOT = Dispatcher("root", propagate=False)
_dispatchers: dict[str, Dispatcher] = {"root": _ROOT}
_dispatchers_guard = threading.Lock()


def get_dispatcher(name: str = "root") -> Dispatcher:
    """The dispatcher called `name` (the root by default), made on first use.

    A new one's parent is the dispatcher of the name one dot shorter when there is one
    (`a.b` for `a.b.c`), else the root.
    """
    with _dispatchers_guard:
        dispatcher = _dispatchers.get(name)
        if dispatcher is None:
            parent = _dispatchers.get(name.rpartition(".")[0], _ROOT)
            dispatcher = _dispatchers[name] = Dispatcher(name, parent=parent)
        return dispatcher


# ------------------------------------------------------------------ the agent runner's events


class AgentRunStepStartEvent(BaseEvent):
    """A step of `task_id` starts; `input` is what the caller gave `run_step` (None: none)."""

    task_id: str
    step: TaskStep | None
    input: StepInput

    @classmethod
    def class_name(cls) -> str:
        """The event's name."""
        return "AgentRunStepStartEvent"


class AgentRunStepEndEvent(BaseEvent):
    """A step completed with `step_output` (a failed step sends no end event)."""

    step_output: TaskStepOutput

    @classmethod
    def class_name(cls) -> str:
        """The event's name."""
        return "AgentRunStepEndEvent"


class AgentChatWithStepStartEvent(BaseEvent):
    """`chat()` (or `stream_chat()`) starts with the user's message."""

    user_msg: str

    @classmethod
    def class_name(cls) -> str:
        """The event's name."""
        return "AgentChatWithStepStartEvent"


class AgentChatWithStepEndEvent(BaseEvent):
    """`chat()` ends with its response (`stream_chat()`: the stream, before it is read)."""

    response: AgentChatResponse | StreamingAgentChatResponse | None

    @classmethod
    def class_name(cls) -> str:
        """The event's name."""
        return "AgentChatWithStepEndEvent"


class _RunnerEvents:
    """Turns the runner's reports (`hooks.RunObserver`) into LlamaIndex's agent events."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    def step_started(self, task_id: str, step: TaskStep, input: StepInput) -> None:
        self.dispatcher.event(AgentRunStepStartEvent(task_id=task_id, step=step, input=input))

    def step_ended(self, output: TaskStepOutput) -> None:
        self.dispatcher.event(AgentRunStepEndEvent(step_output=output))

    def chat_started(self, message: str) -> None:
        self.dispatcher.event(AgentChatWithStepStartEvent(user_msg=message))

    def chat_ended(self, response: AgentChatResponse | StreamingAgentChatResponse) -> None:
        self.dispatcher.event(AgentChatWithStepEndEvent(response=response))


_RUNNER_DISPATCHER = "agent_core.runtime.runner"
_runner_events: _RunnerEvents | None = None
_observing = threading.Lock()


def _send_runner_events() -> None:
    """Have the runner report its steps and chats, once a handler exists to hear of them."""
    global _runner_events
    if _runner_events is not None:
        return
    dispatcher = get_dispatcher(_RUNNER_DISPATCHER)
    with _observing:
        if _runner_events is None:
            events = _RunnerEvents(dispatcher)
            hooks.add_observer(events)
            _runner_events = events
