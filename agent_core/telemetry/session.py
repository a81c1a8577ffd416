"""Who and what a span is about: `using_session` puts a session, a user and metadata on spans.

A context variable, so it reaches the runtime's loop with the call that asks for a step
(asyncio copies the caller's context into the work it schedules). Imports no OpenTelemetry:
it costs nothing while tracing is off.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from agent_core.errors import UserError

__all__ = ["SpanContextFields", "current", "using_session"]


@dataclass(frozen=True)
class SpanContextFields:
    """What `using_session` set: each None (or empty) leaves the span's own value."""

    session_id: str | None = None
    user_id: str | None = None
    metadata: str | None = None
    """JSON text, as OpenInference's `metadata` attribute wants it."""
    tags: tuple[str, ...] = field(default=())


_current: ContextVar[SpanContextFields | None] = ContextVar("stepwise_span_fields", default=None)


def current() -> SpanContextFields | None:
    """The fields `using_session` set around this call, if any."""
    return _current.get()


@contextlib.contextmanager
def using_session(
    session_id: str | None = None,
    *,
    user_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    tags: Sequence[str] = (),
) -> Iterator[None]:
    """Put `session.id`, `user.id`, `metadata` and `tag.tags` on the spans made inside.

    `session_id` replaces the default session (the task's conversation thread); nested
    blocks add to the outer one (the inner value of a field wins, metadata is merged).

    Raises:
        UserError: `metadata` cannot be written as JSON.
    """
    outer = _current.get() or SpanContextFields()
    merged_metadata = json.loads(outer.metadata) if outer.metadata else {}
    merged_metadata.update(metadata or {})
    try:
        metadata_json = json.dumps(merged_metadata) if merged_metadata else None
    except (TypeError, ValueError) as exc:
        raise UserError(f"using_session: metadata must be JSON-serialisable ({exc})") from None
    fields = SpanContextFields(
        session_id=session_id if session_id is not None else outer.session_id,
        user_id=user_id if user_id is not None else outer.user_id,
        metadata=metadata_json,
        tags=tuple(dict.fromkeys((*outer.tags, *tags))),
    )
    token = _current.set(fields)
    try:
        yield
    finally:
        _current.reset(token)
