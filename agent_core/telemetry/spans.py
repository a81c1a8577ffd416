"""OpenTelemetry spans for tasks, steps, model calls and tool calls (OpenInference kinds).

Imported only once tracing is on. The span tree, per process:

    invoke_agent <agent>   AGENT  one per task, open from its creation to finalize/abandon
      step <kind>          CHAIN  one per step run (a retry is a new span)
        chat <model>       LLM    each model call of the step
        execute_tool <t>   TOOL   each tool call of the step

A task outlives the request, the page or even the process that stepped it, so its span is
opened by the first thing this process does with the task (its start is the task's creation
time) and ended by finalize, abandon, delete, `uninstrument`, or at exit. Another process
that steps the same task opens its own task span; every span carries `session.id` = the task
id, which Phoenix and Langfuse group into one session. A step span also links to whatever
span was current where the step was asked for (an HTTP request, a user's own span).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from openinference.semconv.trace import SpanAttributes as SA
from opentelemetry import trace
from opentelemetry.trace import Link, Span, Status, StatusCode, Tracer, TracerProvider

from agent_core.telemetry.attributes import (
    chat_request,
    chat_response,
    error_attributes,
    step_end,
    step_start,
    task_end,
    task_start,
    tool_request,
    tool_result,
)

if TYPE_CHECKING:
    from agent_core.types import TaskState, TaskStep

__all__ = ["CAPTURE_ENV", "MAX_OPEN_TASKS", "Tracing", "capture_from_environment", "traces_url"]

CAPTURE_ENV = "STEPWISE_OTLP_CAPTURE_CONTENT"
MAX_OPEN_TASKS = 1000
"""Task spans kept open per process; the oldest is ended (as still open) past this."""

_TRACER_NAME = "agent_core"


def capture_from_environment() -> bool:
    """Whether `STEPWISE_OTLP_CAPTURE_CONTENT` asks for prompts and outputs in spans."""
    return os.environ.get(CAPTURE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL for `endpoint`: `/v1/traces` is added unless it is there."""
    url = endpoint.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(
            f"an OTLP endpoint must be an http:// or https:// URL, got {endpoint!r} "
            "(e.g. http://localhost:6006 for Phoenix)"
        )
    return url if url.endswith("/v1/traces") else f"{url}/v1/traces"


class Tracing:
    """Tracing switched on: the tracer, whether content is captured, the open task spans."""

    def __init__(
        self,
        provider: TracerProvider,
        *,
        capture_content: bool,
        owns_provider: bool = False,
    ) -> None:
        self.provider = provider
        self.tracer: Tracer = provider.get_tracer(_TRACER_NAME)
        self.capture = capture_content
        self._owns_provider = owns_provider
        self._tasks: OrderedDict[str, Span] = OrderedDict()
        self._guard = threading.Lock()  # Steps run on the runtime loop, undo on any thread.
        atexit.register(self.close)

    @classmethod
    def for_endpoint(cls, endpoint: str, *, capture_content: bool | None = None) -> Tracing:
        """Tracing that batches spans to an OTLP/HTTP collector (Phoenix, Langfuse, ...)."""
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        name = os.environ.get("OTEL_SERVICE_NAME", "stepwise")
        provider = SDKTracerProvider(resource=Resource.create({SERVICE_NAME: name}))
        # Headers (a Langfuse key pair, say) come from OTEL_EXPORTER_OTLP_HEADERS, never code.
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(traces_url(endpoint))))
        capture = capture_from_environment() if capture_content is None else capture_content
        return cls(provider, capture_content=capture, owns_provider=True)

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
        parent = self._task_span(state, runner)
        caller = trace.get_current_span().get_span_context()
        links = [Link(caller, {"stepwise.link": "caller"})] if caller.is_valid else None
        with self._span(
            f"step {step.kind.value}",
            step_start(state, step, capture=self.capture),
            context=trace.set_span_in_context(parent),
            links=links,
        ) as span:
            try:
                output = await work(runner, state, step, *args)
            except BaseException as exc:
                span.set_attribute("stepwise.step.status", _outcome(exc))
                self._error(span, exc)
                raise
            span.set_attributes(step_end(step, output, capture=self.capture))
            span.set_status(Status(StatusCode.OK))
            return output

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
        with self._span(f"chat {llm.model}", attributes) as span:
            try:
                response = await chat(llm, messages, step, emit, **kwargs)
            except BaseException as exc:
                self._error(span, exc)
                raise
            span.set_attributes(chat_response(response, capture=self.capture))
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
        with self._span(f"execute_tool {tool.name}", attributes) as span:
            try:
                result = await call_tool(tool, args, **kwargs)
            except BaseException as exc:
                self._error(span, exc)
                raise
            span.set_attributes(tool_result(result, capture=self.capture))
            if result.is_error:
                why = result.content if self.capture else "the tool returned an error"
                span.set_status(Status(StatusCode.ERROR, why[:500]))
            else:
                span.set_status(Status(StatusCode.OK))
            return result

    def task_event(
        self, state: TaskState, name: str, *, step: TaskStep | None, text: str | None, end: bool
    ) -> None:
        """Add event `name` to the task's span; `end` closes the span with the task's status."""
        span = self._task_span(state, None)
        attributes: dict[str, Any] = {}
        if step is not None:
            attributes.update(
                {"stepwise.step.id": step.step_id, "stepwise.step.branch": step.branch_id}
            )
            if step.number is not None:
                attributes["stepwise.step.number"] = step.number
        if text is not None and self.capture:
            attributes[SA.INPUT_VALUE] = text
        span.add_event(name, attributes)
        if end:
            span.set_attributes(task_end(state, capture=self.capture))
            if state.task.status.value == "completed":
                span.set_status(Status(StatusCode.OK))
            self._end_task(state.task_id)

    def task_deleted(self, task_id: str) -> None:
        """End the task's span, if open here, with a `task_deleted` event."""
        with self._guard:
            span = self._tasks.get(task_id)
        if span is not None:
            span.add_event("task_deleted")
            self._end_task(task_id)

    # ---------------------------------------------------------------------- life cycle

    def close(self) -> None:
        """End every open task span (marked still open) and flush; at exit or `uninstrument`."""
        atexit.unregister(self.close)
        with self._guard:
            open_spans = list(self._tasks.values())
            self._tasks.clear()
        for span in open_spans:
            span.set_attribute("stepwise.task.open", True)
            span.end()
        flush = getattr(self.provider, "force_flush", None)
        if self._owns_provider:
            self.provider.shutdown()  # type: ignore[attr-defined]
        elif flush is not None:
            flush()

    # ------------------------------------------------------------------------- helpers

    def _span(
        self,
        name: str,
        attributes: Mapping[str, Any],
        *,
        context: Any = None,
        links: list[Link] | None = None,
    ) -> Any:
        # Errors are recorded by hand: an exception message may quote the model.
        return self.tracer.start_as_current_span(
            name,
            context=context,
            attributes=attributes,
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
        span.set_status(Status(StatusCode.ERROR, description[:500]))
        if self.capture:
            span.record_exception(exc)

    def _task_span(self, state: TaskState, runner: Any) -> Span:
        """The task's span in this process, opened now if it is not open yet."""
        with self._guard:
            span = self._tasks.get(state.task_id)
            if span is not None:
                self._tasks.move_to_end(state.task_id)  # The oldest untouched is evicted first.
                return span
            attributes, name = task_start(state, runner, capture=self.capture)
            start = int(state.task.created_at.timestamp() * 1_000_000_000)
            span = self.tracer.start_span(name, attributes=attributes, start_time=start)
            self._tasks[state.task_id] = span
            crowded = len(self._tasks) > MAX_OPEN_TASKS
            evicted = self._tasks.popitem(last=False)[1] if crowded else None
        if evicted is not None:
            evicted.set_attribute("stepwise.task.open", True)
            evicted.end()
        return span

    def _end_task(self, task_id: str) -> None:
        with self._guard:
            span = self._tasks.pop(task_id, None)
        if span is not None:
            span.end()


def _outcome(exc: BaseException) -> str:
    # A cancelled step went back to upcoming untouched (or was stopped: then it is a StepError).
    return "interrupted" if isinstance(exc, asyncio.CancelledError) else "failed"
