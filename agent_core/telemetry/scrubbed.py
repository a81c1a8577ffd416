"""What a span exports, scrubbed of credentials: attributes, error statuses, exception events.

The spans' one way out. With content capture on, an error message is exported (a model's
error quotes its base URL, which can hold `?api_key=`), and so are prompts and tool outputs,
which can quote a signed URL: every text goes through `agent_core.redaction.scrub` here, on
its way into OpenTelemetry, so it holds whichever provider and exporter take the spans.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from typing import Any

from agent_core.redaction import scrub

__all__ = ["MAX_STATUS_CHARS", "attributes", "error_description", "exception_event"]

MAX_STATUS_CHARS = 500


def attributes(values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` with every text (and every text in a list) scrubbed."""
    return {key: _scrubbed(value) for key, value in values.items()}


def _scrubbed(value: Any) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, list | tuple):
        return [scrub(item) if isinstance(item, str) else item for item in value]
    return value


def error_description(text: str) -> str:
    """A status description: `text` scrubbed, then cut (a cut must not leave half a key)."""
    return scrub(text)[:MAX_STATUS_CHARS]


def exception_event(exc: BaseException) -> dict[str, str]:
    """The message and stack text of an `exception` event, scrubbed (causes' messages too).

    Given to `record_exception`, they replace the ones it would take from `exc` as they are.
    """
    return {
        "exception.message": scrub(str(exc)),
        "exception.stacktrace": scrub("".join(traceback.format_exception(exc))),
    }
