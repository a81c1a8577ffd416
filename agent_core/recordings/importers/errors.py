"""`TraceImportError`: a file that cannot be imported, named with what is wrong and where."""

from __future__ import annotations

from typing import Any

from agent_core.errors import UserError

__all__ = ["TraceImportError"]


class TraceImportError(UserError):
    """A file to import is not readable as any trace format, or breaks one of its bounds.

    Its `code` says which (`trace_unreadable`, `trace_format_unknown`, `trace_too_large`,
    `trace_too_deep`, `trace_malformed`, `trace_no_model_calls`); `params` name the `file`
    and, when known, the `span` (a span, observation or run id) and `field`. Nothing was
    stored: an import writes all of a file's tasks or none.
    """

    default_code = "trace_unreadable"

    def __init__(
        self,
        message: str = "",
        *,
        file: str = "",
        span: str = "",
        code: str = "",
        hint: str = "",
        params: dict[str, Any] | None = None,
    ) -> None:
        facts = {"file": file, **({"span": span} if span else {}), **(params or {})}
        super().__init__(message, hint=hint, code=code, params=facts)
        self.file = file
        self.span = span
