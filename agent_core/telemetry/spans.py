"""OpenTelemetry spans for tasks, steps, model calls and tool calls (OpenInference kinds).

Imported only once tracing is on. The span tree of a task is one trace, whose trace id is
the task id (both are 128 random-ended bits), so every process that steps the task, even
after a restart, adds to the same trace:

    invoke_agent <agent>             AGENT  the task opened: ended at once, the trace's root
      step 1 · llm → multiply        CHAIN  one per step run (a retry is a new span)
        chat <model>                 LLM    each model call of the step
      step 2 · tool add              CHAIN
        execute_tool add             TOOL   each tool call of the step
      undo step 2 · tool add         CHAIN  at undo time; `stepwise.step.undone`
      step 2 · tool add · re-run     CHAIN  the undone step again (also: edited, rejected)
      step 3 · feedback              CHAIN  a person's message, a skip, an edit of the chat
      task finalized                 AGENT  at finalize or abandon: status, totals, answer

OpenTelemetry exports a span when it ends, and a task stays open for minutes or days while a
person debugs it: a task span held open until finalize would leave its steps parentless in
Phoenix all that time. So the root ends as soon as it starts (its start is the task's
creation), and the summary is a child at the end. The root's span id is derived from the
task id too, so a process that did not open the task parents its steps under the same root
(it sends the root once as well, with the same ids). A planner's sub-agent task is opened
inside the delegate step that runs it, as a child of that step in the outer task's trace.
A step span also links to whatever span was current where the step was asked for (an HTTP
request, a user's own span).
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openinference.semconv.trace import OpenInferenceSpanKindValues as Kinds
from openinference.semconv.trace import SpanAttributes as SA
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
    TracerProvider,
)

from agent_core.telemetry import scrubbed
from agent_core.telemetry.attributes import (
    chat_request,
    chat_response,
    error_attributes,
    step_end,
    step_fields,
    step_span_name,
    step_start,
    task_end,
    task_fields,
    task_start,
    tool_request,
    tool_result,
)
from agent_core.telemetry.export import SHUTDOWN_TIMEOUT_S, OtlpExport
from agent_core.types import StepKind, StepStatus

if TYPE_CHECKING:
    from agent_core.types import TaskState, TaskStep

__all__ = [
    "CAPTURE_ENV",
    "MAX_TASKS_KEPT",
    "Tracing",
    "capture_from_environment",
    "root_ids",
]

CAPTURE_ENV = "STEPWISE_OTLP_CAPTURE_CONTENT"
MAX_TASKS_KEPT = 1000
"""Tasks whose root this process remembers; one evicted is only sent again if touched again."""
_MAX_STEPS_KEPT = 10_000
"""Step spans remembered, for the undo span and the re-run to link to the step they undo."""

_TRACER_NAME = "agent_core"
_HEX_ID = re.compile(r"[0-9a-f]{32}")


def capture_from_environment() -> bool:
    """Whether `STEPWISE_OTLP_CAPTURE_CONTENT` asks for prompts and outputs in spans."""
    return os.environ.get(CAPTURE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def root_ids(task_id: str) -> tuple[int, int]:
    """The (trace id, span id) of a task's root span.

    The trace id is the task id itself when it is 32 hex digits (as `new_id` makes them),
    else a hash of it; the span id comes from the same hash.
    """
    digest = hashlib.sha256(task_id.encode()).digest()
    trace_id = int(task_id, 16) if _HEX_ID.fullmatch(task_id) else 0
    trace_id = trace_id or int.from_bytes(digest[:16]) or 1
    return trace_id, int.from_bytes(digest[16:24]) or 1


class _ChosenIds(IdGenerator):
    """The provider's id generator, except for the next span a thread asked ids for.

    OpenTelemetry's API cannot start a root span with given ids; the SDK's tracer asks its
    id generator, so our own tracer gets this one (nobody else's spans are touched).
    """

    def __init__(self, inner: IdGenerator) -> None:
        self.inner = inner
        self._chosen = threading.local()

    def choose(self, ids: tuple[int, int] | None) -> None:
        self._chosen.ids = ids

    def _ids(self) -> tuple[int, int] | None:
        return getattr(self._chosen, "ids", None)

    def generate_trace_id(self) -> int:
        ids = self._ids()
        return ids[0] if ids is not None else self.inner.generate_trace_id()

    def generate_span_id(self) -> int:
        ids = self._ids()
        return ids[1] if ids is not None else self.inner.generate_span_id()

    def is_trace_id_random(self) -> bool:
        return self._ids() is None and self.inner.is_trace_id_random()


@dataclass(frozen=True)
class _Running:
    """The step whose work is running in this context, and what its task's spans all carry."""

    step: TaskStep
    span: Span
    fields: dict[str, Any]


_running: ContextVar[_Running | None] = ContextVar("stepwise_running_step", default=None)


class Tracing:
    """Tracing switched on: the tracer, whether content is captured, what it remembers."""

    def __init__(
        self,
        provider: TracerProvider,
        *,
        capture_content: bool,
        export: OtlpExport | None = None,
    ) -> None:
        self.provider = provider
        self.tracer: Tracer = provider.get_tracer(_TRACER_NAME)
        self._ids = _choose_ids(self.tracer)
        self.capture = capture_content
        self._export = export
        """The provider made here for an endpoint, shut down on close; None: the caller's."""
        self._roots: OrderedDict[str, SpanContext] = OrderedDict()
        self._steps: OrderedDict[str, SpanContext] = OrderedDict()
        """The last span of each step run here, for the spans that undo or re-run it."""
        self._reruns: OrderedDict[str, str] = OrderedDict()
        """Re-run step id -> the undone step's id."""
        self._undoing: OrderedDict[str, tuple[object, list[TaskStep]]] = OrderedDict()
        """Task id -> (the undo's change, the steps it undid so far), until it is committed."""
        self._guard = threading.Lock()  # Steps run on the runtime loop, undo on any thread.
        atexit.register(self.close)

    @classmethod
    def for_endpoint(cls, endpoint: str, *, capture_content: bool | None = None) -> Tracing:
        """Tracing that batches spans to an OTLP/HTTP collector (Phoenix, Langfuse, ...)."""
        export = OtlpExport.to(endpoint)
        capture = capture_from_environment() if capture_content is None else capture_content
        return cls(export.provider, capture_content=capture, export=export)

    # ------------------------------------------------------------------------ the hooks

    async def step(
        self,
        work: Callable[..., Coroutine[Any, Any, Any]],
        runner: Any,
        state: TaskState,
        step: TaskStep,
        *args: Any,
    ) -> Any:
        """Run a claimed step (`_step_transaction.run_claimed`) in a step span under the task's."""
        root = self._task_root(state, runner)
        undone, links = self._rerun_of(step)
        attributes = step_start(state, step, capture=self.capture)
        if undone is not None:
            attributes["stepwise.step.rerun_of"] = undone
        rerun = undone is not None
        with self._span(
            step_span_name(step, len(state.completed) + 1, rerun=rerun),
            attributes,
            context=_under(root),
            links=links or None,
        ) as span:
            running = _running.set(_Running(step, span, task_fields(state.task)))
            try:
                output = await work(runner, state, step, *args)
            except BaseException as exc:
                span.set_attribute("stepwise.step.status", _outcome(exc))
                self._error(span, exc)
                raise
            finally:
                _running.reset(running)
                with self._guard:
                    self._remember(self._steps, step.step_id, span.get_span_context())
            span.update_name(step_span_name(step, step.number, rerun=rerun, output=output))
            span.set_attributes(scrubbed.attributes(step_end(step, output, capture=self.capture)))
            span.set_status(Status(StatusCode.OK))
            return output

    def _rerun_of(self, step: TaskStep) -> tuple[str | None, list[Link]]:
        """The step this one runs again after an undo (if undone here), and the step's links."""
        links = _caller_links()
        with self._guard:
            undone = self._reruns.get(step.step_id)
            undone_span = self._steps.get(undone) if undone is not None else None
        if undone_span is not None:
            links.append(Link(undone_span, {"stepwise.link": "re-run of"}))
        return undone, links

    async def chat(
        self,
        chat: Callable[..., Coroutine[Any, Any, Any]],
        llm: Any,
        messages: Any,
        step: TaskStep,
        emit: Any,
        **kwargs: Any,
    ) -> Any:
        """Run one model call of a step inside an LLM span."""
        tools = kwargs.get("tools")
        attributes = chat_request(
            llm, messages, tools, step, stream=emit is not None, capture=self.capture
        )
        with self._span(f"chat {llm.model}", {**attributes, **_task_fields()}) as span:
            try:
                response = await chat(llm, messages, step, emit, **kwargs)
            except BaseException as exc:
                self._error(span, exc)
                raise
            span.set_attributes(scrubbed.attributes(chat_response(response, capture=self.capture)))
            span.set_status(Status(StatusCode.OK))
            return response

    async def tool_call(
        self,
        call_tool: Callable[..., Coroutine[Any, Any, Any]],
        tool: Any,
        args: dict[str, Any],
        **kwargs: Any,
    ) -> Any:
        """Run one tool call inside a tool span; an `is_error` result is an error status."""
        attributes = tool_request(tool, args, capture=self.capture, **kwargs)
        with self._span(f"execute_tool {tool.name}", {**attributes, **_task_fields()}) as span:
            try:
                result = await call_tool(tool, args, **kwargs)
            except BaseException as exc:
                self._error(span, exc)
                raise
            span.set_attributes(scrubbed.attributes(tool_result(result, capture=self.capture)))
            if result.is_error:
                why = result.content if self.capture else "the tool returned an error"
                span.set_status(Status(StatusCode.ERROR, scrubbed.error_description(why)))
            else:
                span.set_status(Status(StatusCode.OK))
            return result

    def step_undone(self, state: TaskState, step: TaskStep, change: object) -> None:
        """Note a step undone by `change`, not yet committed: its span waits for the commit."""
        with self._guard:
            pending = self._undoing.get(state.task_id)
            if pending is None or pending[0] is not change:  # A new undo (an old one failed).
                pending = (change, [])
            pending[1].append(step)
            self._remember(self._undoing, state.task_id, pending)

    def task_event(
        self, state: TaskState, name: str, *, step: TaskStep | None, text: str | None, end: bool
    ) -> None:
        """Record what happened to the task as a short span under its root.

        `step_undone` makes an undo span per step undone; `end` (finalize, abandon) makes the
        task's summary span.
        """
        root = self._task_root(state, None)
        if name == "step_undone":
            self._undo_spans(state, root, step)
        elif end:
            self._summary_span(state, root, name)
        elif name != "step_edited":  # An edit shows on the step's own span when it runs.
            self._event_span(state, root, name, step=step, text=text)

    def task_deleted(self, task_id: str) -> None:
        """Forget the task; a `task deleted` span under its root, if this process traced it."""
        with self._guard:
            root = self._roots.pop(task_id, None)
            self._undoing.pop(task_id, None)
        if root is not None:
            attributes = {
                SA.OPENINFERENCE_SPAN_KIND: Kinds.CHAIN.value,
                "stepwise.task.id": task_id,
            }
            self._instant("task deleted", attributes, root)

    # --------------------------------------------------------------------- task spans

    def _undo_spans(self, state: TaskState, root: SpanContext, step: TaskStep | None) -> None:
        with self._guard:
            pending = self._undoing.pop(state.task_id, None)
        undone = pending[1] if pending is not None else [step] if step is not None else []
        for gone in undone:
            with self._guard:
                ran = self._steps.get(gone.step_id)
            attributes = {
                SA.OPENINFERENCE_SPAN_KIND: Kinds.CHAIN.value,
                **task_fields(state.task),
                **step_fields(gone),
                "stepwise.step.undone": True,
                "stepwise.step.undo_warnings": len(gone.undo_warnings),
            }
            links = [Link(ran, {"stepwise.link": "undone step"})] if ran is not None else None
            name = step_span_name(gone, gone.number, output=state.outputs.get(gone.step_id))
            self._instant(f"undo {name}", attributes, root, links=links)
        # The last step undone is the earliest; its fresh copy heads the queue.
        earliest = undone[-1] if undone else None
        if earliest is not None and earliest.kind is not StepKind.HUMAN and state.queue:
            with self._guard:
                self._remember(self._reruns, state.queue[0], earliest.step_id)

    def _event_span(
        self,
        state: TaskState,
        root: SpanContext,
        name: str,
        *,
        step: TaskStep | None,
        text: str | None,
    ) -> None:
        attributes: dict[str, Any] = {
            SA.OPENINFERENCE_SPAN_KIND: Kinds.CHAIN.value,
            **task_fields(state.task),
            "stepwise.event": name,
        }
        links = None
        words = name.removeprefix("step_").replace("_", " ")
        title = words
        if step is not None:
            attributes.update(step_fields(step))
            if step.status is StepStatus.SKIPPED:
                title = step_span_name(step, step.number)
            else:
                title = f"step {step.number} · {words}" if step.number is not None else words
        if name == "task_forked" and text:  # The original task: its trace, by its id.
            attributes["stepwise.task.forked_from"] = text
            original = SpanContext(*root_ids(text), is_remote=True, trace_flags=_SAMPLED)
            links = [Link(original, {"stepwise.link": "forked from"})]
        elif text is not None and self.capture:
            attributes[SA.INPUT_VALUE] = text
        self._instant(title, attributes, root, links=links)

    def _summary_span(self, state: TaskState, root: SpanContext, name: str) -> None:
        attributes: dict[str, Any] = {
            SA.OPENINFERENCE_SPAN_KIND: Kinds.AGENT.value,
            **task_fields(state.task),
            **task_end(state, capture=self.capture),
            "stepwise.event": name,
        }
        span = self.tracer.start_span(
            name.replace("_", " "), context=_under(root), attributes=scrubbed.attributes(attributes)
        )
        if state.task.status.value == "completed":
            span.set_status(Status(StatusCode.OK))
        span.end()
        with self._guard:
            self._roots.pop(state.task_id, None)

    def _instant(
        self,
        name: str,
        attributes: Mapping[str, Any],
        root: SpanContext,
        *,
        links: list[Link] | None = None,
    ) -> None:
        """A span for a moment (an undo, a skip, a person's message): started and ended now."""
        span = self.tracer.start_span(
            name, context=_under(root), attributes=scrubbed.attributes(attributes), links=links
        )
        span.set_status(Status(StatusCode.OK))
        span.end()

    # ---------------------------------------------------------------------- life cycle

    def close(self) -> None:
        """Forget the tasks and flush (or shut down a provider made here); at exit too.

        A provider made here waits SHUTDOWN_TIMEOUT_S at most: a collector that is down or
        silent must not hold a script's exit.
        """
        atexit.unregister(self.close)
        with self._guard:
            self._roots.clear()
        if self._export is not None:
            self._export.shutdown()
            return
        flush = getattr(self.provider, "force_flush", None)
        if flush is not None:
            flush(int(SHUTDOWN_TIMEOUT_S * 1000))

    # ------------------------------------------------------------------------- helpers

    def _span(
        self,
        name: str,
        attributes: Mapping[str, Any],
        *,
        context: Any = None,
        links: list[Link] | None = None,
    ) -> Any:
        # Errors are recorded by hand: a message may quote the model, or a key in a URL.
        return self.tracer.start_as_current_span(
            name,
            context=context,
            attributes=scrubbed.attributes(attributes),
            links=links,
            record_exception=False,
            set_status_on_exception=False,
        )

    def _error(self, span: Span, exc: BaseException) -> None:
        if isinstance(exc, asyncio.CancelledError):
            span.set_attribute("stepwise.cancelled", True)
            return  # A stop or an interrupt, not a failure of the work.
        span.set_attributes(error_attributes(exc))
        description = str(exc) if self.capture else type(exc).__name__
        span.set_status(Status(StatusCode.ERROR, scrubbed.error_description(description)))
        if self.capture:
            span.record_exception(exc, attributes=scrubbed.exception_event(exc))

    def _task_root(self, state: TaskState, runner: Any) -> SpanContext:
        """The context of the task's root span, sent now if this process has not sent it."""
        with self._guard:  # Held while sending: two threads must not both send one root.
            root = self._roots.get(state.task_id)
            if root is None:
                root = self._send_root(state, runner)
            self._remember(self._roots, state.task_id, root)
            return root

    def _send_root(self, state: TaskState, runner: Any) -> SpanContext:
        running = _running.get()
        within = running if running is not None and running.step.task_id != state.task_id else None
        attributes, name = task_start(
            state, runner, capture=self.capture, within=within.step if within else None
        )
        attributes = scrubbed.attributes(attributes)
        start = int(state.task.created_at.timestamp() * 1_000_000_000)
        if within is not None:  # A sub-agent's task: part of the step that runs it.
            parent = trace.set_span_in_context(within.span)
            span = self.tracer.start_span(name, parent, attributes=attributes, start_time=start)
        else:
            links = _caller_links() or None
            chosen = root_ids(state.task_id) if self._ids is not None else None
            if self._ids is not None:
                self._ids.choose(chosen)
            try:  # An empty context: a task is a trace of its own, whoever asked for it.
                span = self.tracer.start_span(
                    name,
                    otel_context.Context(),
                    attributes=attributes,
                    links=links,
                    start_time=start,
                )
            finally:
                if self._ids is not None:
                    self._ids.choose(None)
        span.set_status(Status(StatusCode.OK))
        span.end()
        return span.get_span_context()

    def _remember(self, kept: OrderedDict[str, Any], key: str, value: Any) -> None:
        """Keep `value` under `key`, newest last, dropping the oldest past the bound.

        Called with `_guard` held.
        """
        kept[key] = value
        kept.move_to_end(key)
        bound = _MAX_STEPS_KEPT if kept is self._steps else MAX_TASKS_KEPT
        while len(kept) > bound:
            kept.popitem(last=False)


_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def _choose_ids(tracer: Tracer) -> _ChosenIds | None:
    """Give the SDK's tracer ids we choose for task roots; None for another API's tracer."""
    inner = getattr(tracer, "id_generator", None)
    if not isinstance(inner, IdGenerator):
        return None
    chosen = _ChosenIds(inner)
    tracer.id_generator = chosen  # type: ignore[attr-defined]
    return chosen


def _under(root: SpanContext) -> otel_context.Context:
    return trace.set_span_in_context(NonRecordingSpan(root))


def _caller_links() -> list[Link]:
    """A link to the span current where the work was asked for (an HTTP request, say)."""
    caller = trace.get_current_span().get_span_context()
    if not caller.is_valid or _running.get() is not None:
        return []
    return [Link(caller, {"stepwise.link": "caller"})]


def _task_fields() -> dict[str, Any]:
    running = _running.get()
    return running.fields if running is not None else {}


def _outcome(exc: BaseException) -> str:
    # A cancelled step went back to upcoming untouched (or was stopped: then it is a StepError).
    return "interrupted" if isinstance(exc, asyncio.CancelledError) else "failed"
