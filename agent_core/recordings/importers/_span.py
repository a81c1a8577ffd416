"""`Span`: one OpenTelemetry span as read from OTLP JSON, its attributes decoded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Span"]


@dataclass(slots=True)
class Span:
    """One span, its attributes decoded."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: str | None = None
    """The status message (or "error") when the span's status is ERROR."""
    scope: str = ""
    order: int = 0

    @property
    def latency_ms(self) -> float:
        """How long the span lasted."""
        return max(self.end_ns - self.start_ns, 0) / 1e6
