"""How both HTTP APIs listen: uvicorn's h11 parser with bounded request headers.

uvicorn's default parser (httptools, when installed) buffers a request's headers without
limit, before any route or the token gate runs: ten requests with 64 MB of headers took a
server from 78 MB to 649 MB. The connection below refuses a request line and headers past
`MAX_HEADER_BYTES`, or more than `MAX_HEADER_COUNT` header fields, with a 431 and a JSON error,
and closes the connection: enough for any browser, proxy or client library. h11's own bound
(`max_incomplete_event_size`) counts only a head still arriving: one that came whole in a
read of 64 KiB passed it, so heads of up to ~100 KiB were served.
"""

from __future__ import annotations

import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["MAX_HEADER_BYTES", "MAX_HEADER_COUNT", "BoundedH11Protocol", "uvicorn_options"]

MAX_HEADER_BYTES = 32 * 1024
"""The request line and headers together (nginx's default buffers hold as much)."""
MAX_HEADER_COUNT = 100
"""Header fields in one request (Apache's default `LimitRequestFields`)."""


class _BoundedConnection(h11.Connection):
    """h11's server side, refusing a request head over `MAX_HEADER_BYTES` or `MAX_HEADER_COUNT`.

    Attributes:
        refusal: Why the last request was refused (its status hint says 400 or 431), or None.
    """

    refusal: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:
        try:
            event = super().next_event()
            if isinstance(event, h11.Request):
                _check_head(event)
        except h11.RemoteProtocolError as exc:
            self.refusal = exc
            raise
        return event


def _check_head(request: h11.Request) -> None:
    if len(request.headers) > MAX_HEADER_COUNT:
        raise h11.RemoteProtocolError(
            f"more than {MAX_HEADER_COUNT} header fields", error_status_hint=431
        )
    # The head as sent: "METHOD target HTTP/1.1\r\n", "name: value\r\n" per field, "\r\n".
    size = len(request.method) + len(request.target) + 13
    size += sum(len(name) + len(value) + 4 for name, value in request.headers.raw_items())
    if size + 2 > MAX_HEADER_BYTES:
        raise h11.RemoteProtocolError("request head too large", error_status_hint=431)


_REFUSALS = {
    431: (
        "request_headers_too_large",
        f"the request line and headers are over {MAX_HEADER_BYTES // 1024} KiB or "
        f"{MAX_HEADER_COUNT} fields, the most this server reads",
        "send fewer or shorter headers (a large value belongs in the body)",
    ),
    400: ("invalid_http_request", "the request is not valid HTTP/1.1", ""),
}


_REASONS = {431: b"Request Header Fields Too Large", 400: b"Bad Request"}


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol over `_BoundedConnection`: refusals are JSON with a stable code."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = _BoundedConnection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)

    def send_400_response(self, msg: str) -> None:
        """Answer a refused request (uvicorn's text 400) as JSON, 431 for a head too large."""
        refusal = self.conn.refusal
        status = 431 if refusal is not None and refusal.error_status_hint == 431 else 400
        code, message, hint = _REFUSALS[status]
        body = json.dumps({"error": {"code": code, "message": message, "hint": hint}}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=status, headers=headers, reason=_REASONS[status]),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event))
        self.transport.close()  # uvicorn's own closes here too (h11 now refuses anything else).


def uvicorn_options() -> dict[str, Any]:
    """The keyword arguments of `uvicorn.run` / `uvicorn.Config` that bound request headers."""
    return {"http": BoundedH11Protocol, "h11_max_incomplete_event_size": MAX_HEADER_BYTES}
