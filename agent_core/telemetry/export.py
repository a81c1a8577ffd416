"""Spans to an OTLP/HTTP collector, in batches, with a shutdown that never holds the exit.

The SDK's batch processor waits up to 30 s at shutdown for its last export, and the exporter
retries a collector that is down for up to 10 s: a script's exit took 8-9 s with the collector
down, 11 s with one that accepts and never answers. Here shutdown waits SHUTDOWN_TIMEOUT_S at
most; spans not sent by then are dropped (the SDK's threads are daemons, so none of them holds
the process either).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider

__all__ = ["SHUTDOWN_TIMEOUT_S", "OtlpExport", "traces_url"]

SHUTDOWN_TIMEOUT_S = 1.0
"""How long closing tracing (at exit, or `uninstrument`) waits for the last spans to be sent."""


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL for `endpoint`: `/v1/traces` is added unless it is there."""
    url = endpoint.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(
            f"an OTLP endpoint must be an http:// or https:// URL, got {endpoint!r} "
            "(e.g. http://localhost:6006 for Phoenix)"
        )
    return url if url.endswith("/v1/traces") else f"{url}/v1/traces"


@dataclass(frozen=True)
class OtlpExport:
    """A provider made here for an endpoint, and its exporter (to stop its retries)."""

    provider: TracerProvider
    exporter: OTLPSpanExporter

    @classmethod
    def to(cls, endpoint: str) -> OtlpExport:
        """Batch spans to `endpoint` (OTLP/HTTP); ValueError if it is not an http(s) URL."""
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        url = traces_url(endpoint)
        name = os.environ.get("OTEL_SERVICE_NAME", "stepwise")
        # No exit hook of the SDK's own (it would wait 30 s): Tracing.close shuts it down, bounded.
        provider = TracerProvider(
            resource=Resource.create({SERVICE_NAME: name}), shutdown_on_exit=False
        )
        # Headers (a Langfuse key pair, say) come from OTEL_EXPORTER_OTLP_HEADERS, never code.
        exporter = OTLPSpanExporter(url)
        provider.add_span_processor(BatchSpanProcessor(exporter))
        return cls(provider, exporter)

    def shutdown(self, timeout: float = SHUTDOWN_TIMEOUT_S) -> bool:
        """Send what is queued and shut down, waiting `timeout` seconds at most.

        Returns whether everything was sent in time. The SDK's shutdown takes no timeout, so
        it runs on a thread of its own; past the timeout the exporter is shut down, which
        ends its retries and the thread with them.
        """
        closing = threading.Thread(
            target=self.provider.shutdown, name="stepwise-otlp-shutdown", daemon=True
        )
        closing.start()
        closing.join(timeout)
        if not closing.is_alive():
            return True
        self.exporter.shutdown()
        return False
