"""OpenTelemetry traces of tasks, steps, model calls and tool calls (OpenInference).

For Phoenix, Langfuse or any OTLP collector, with the OpenInference semantic conventions.
Off by default, and then free: OpenTelemetry is not even imported. Turn it on with one
setting, either the environment variable `STEPWISE_OTLP_ENDPOINT` (an OTLP/HTTP endpoint such
as `http://localhost:6006` for Phoenix, read once when the runtime first needs it), or:

    from agent_core import telemetry

    telemetry.instrument(endpoint="http://localhost:6006")      # or
    telemetry.instrument(tracer_provider)                       # your own provider

Prompt text, model output, tool arguments, tool output and error messages stay out of the
spans unless asked for, with `capture_content=True` or `STEPWISE_OTLP_CAPTURE_CONTENT=1`.
No API key ever reaches a span: attributes are taken from an allow-list of fields, a
model's base URL is exported without its user, password and query, and every text a span
exports (an error's status and exception event, a captured prompt or tool output) has the
credentials of the URLs it quotes scrubbed (`agent_core.redaction`).

With an endpoint, the exit waits for the last spans 1 s at most (`export.SHUTDOWN_TIMEOUT_S`):
a collector that is down or never answers does not hold a script; what it did not take is lost.

The span tree (see `agent_core.telemetry.spans`): one trace per task, whose id is the task
id, with the task's AGENT root, its steps' CHAIN spans (`step 3 · tool add`), under each step
its LLM and TOOL spans, and a short span for each undo, skip and person's message, and the
task's summary at finalize or abandon. `using_session` adds a session, a user and metadata.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_core.errors import UserError
from agent_core.extras import require
from agent_core.telemetry import hooks
from agent_core.telemetry.session import using_session

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["instrument", "is_instrumented", "uninstrument", "using_session"]


def instrument(
    tracer_provider: TracerProvider | None = None,
    *,
    endpoint: str | None = None,
    capture_content: bool = False,
) -> None:
    """Trace every task, step, model call and tool call of this process from now on.

    Args:
        tracer_provider: Where spans go; defaults to the global provider (set by
            `phoenix.otel.register()`, say), or a new one for `endpoint`.
        endpoint: An OTLP/HTTP collector to send spans to in batches; `/v1/traces` is added
            unless the URL ends with it. Headers (a Langfuse key pair) are read from
            `OTEL_EXPORTER_OTLP_HEADERS` by the exporter.
        capture_content: Also export prompts, replies, tool arguments and outputs, and error
            messages (`STEPWISE_OTLP_CAPTURE_CONTENT=1` asks for it too).

    Raises:
        UserError: Both `tracer_provider` and `endpoint` were given, or the endpoint is not
            an http(s) URL.
        MissingExtraError: OpenTelemetry is not installed (`stepwise[otel]`).
    """
    if tracer_provider is not None and endpoint is not None:
        raise UserError(
            "give instrument() a tracer_provider or an endpoint, not both: "
            "add an OTLP exporter to your provider instead"
        )
    require("otel", feature="tracing (telemetry.instrument)")
    from agent_core.telemetry.spans import Tracing, capture_from_environment

    capture = capture_content or capture_from_environment()
    if endpoint is not None:
        try:
            tracing = Tracing.for_endpoint(endpoint, capture_content=capture)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    else:
        from opentelemetry import trace

        provider = tracer_provider or trace.get_tracer_provider()
        tracing = Tracing(provider, capture_content=capture)
    uninstrument()
    hooks.tracing = tracing


def uninstrument() -> None:
    """Stop tracing: a provider made here flushes its spans and shuts down.

    The environment variable is not read again: tracing stays off until `instrument`.
    """
    current = hooks.tracing
    hooks.tracing = None
    if current is not None and not isinstance(current, hooks._Unresolved):
        current.close()


def is_instrumented() -> bool:
    """Whether spans are being made (by `instrument`, or because the endpoint variable is set)."""
    return hooks.active() is not None
