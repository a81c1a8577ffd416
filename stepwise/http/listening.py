"""How both HTTP APIs listen: uvicorn's h11 parser with bounded request headers.

uvicorn's default parser (httptools, when installed) buffers a request's headers without
limit, before any route or the token gate runs: ten requests with 64 MB of headers took a
server from 78 MB to 649 MB. h11 refuses a header block past `MAX_HEADER_BYTES` (uvicorn answers
400 and closes the connection), and the connection below refuses more than `MAX_HEADER_COUNT`
header fields the same way: enough for any browser, proxy or client library.
"""

from __future__ import annotations

from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["MAX_HEADER_BYTES", "MAX_HEADER_COUNT", "BoundedH11Protocol", "uvicorn_options"]

MAX_HEADER_BYTES = 32 * 1024
"""The request line and headers together (nginx's default buffers hold as much)."""
MAX_HEADER_COUNT = 100
"""Header fields in one request (Apache's default `LimitRequestFields`)."""


class _BoundedConnection(h11.Connection):
    """h11's server side, refusing a request with more than `MAX_HEADER_COUNT` fields."""

    def next_event(self) -> Any:
        event = super().next_event()
        if isinstance(event, h11.Request) and len(event.headers) > MAX_HEADER_COUNT:
            raise h11.RemoteProtocolError(
                f"more than {MAX_HEADER_COUNT} header fields", error_status_hint=431
            )
        return event


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol over `_BoundedConnection` (its size bound comes from the config)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = _BoundedConnection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)


def uvicorn_options() -> dict[str, Any]:
    """The keyword arguments of `uvicorn.run` / `uvicorn.Config` that bound request headers."""
    return {"http": BoundedH11Protocol, "h11_max_incomplete_event_size": MAX_HEADER_BYTES}
