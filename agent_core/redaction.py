"""Credentials out of text that leaves the process: the one scrubber for URLs and key pairs.

A model's error quotes its base URL, and a base URL can carry its key (`?api_key=sk-...`,
`https://user:key@host`); a tool's error can quote a signed URL (`?sig=`, `X-Amz-Signature=`).
`scrub` takes the user info and every query and fragment value out of each URL in a text,
and the value of every `name=value` pair whose name says key, token, secret, signature,
password, credential or auth (a URL written without its scheme, a form body). `safe_url` is
the stricter form for a URL given alone: user info, query and fragment all go.

An API key the caller knows is replaced by `agent_core.llms` itself, wherever it appears.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["REDACTED", "safe_url", "scrub"]

REDACTED = "[redacted]"

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'`<>]+", re.IGNORECASE)
_SECRET_PAIR = re.compile(
    r"(?<![\w.-])([\w.-]*(?:key|token|secret|sig|signature|passw(?:or)?d|pwd|credential|auth))"
    r"=[^\s&;#,\"'`<>)]+",
    re.IGNORECASE,
)


def scrub(text: str) -> str:
    """`text` with the credentials a URL or a `key=value` pair can hold replaced by REDACTED."""
    if "://" not in text and "=" not in text:  # Most text: nothing to look for.
        return text
    text = _URL.sub(lambda match: _scrub_url(match.group()), text)
    return _SECRET_PAIR.sub(lambda match: f"{match.group(1)}={REDACTED}", text)


def _scrub_url(url: str) -> str:
    scheme, _, rest = url.partition("://")
    cut = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:  # user:password@host
        authority = f"{REDACTED}@{authority.rpartition('@')[2]}"
    tail, hash_mark, fragment = tail.partition("#")
    path, question_mark, query = tail.partition("?")
    return (
        f"{scheme}://{authority}{path}{question_mark}{_blank_values(query)}"
        f"{hash_mark}{_blank_values(fragment)}"
    )


def _blank_values(query: str) -> str:
    """`a=1&b=2` as `a=[redacted]&b=[redacted]`; a bare item (`?sk-...`) goes whole."""
    pairs = (pair.partition("=") for pair in query.split("&")) if query else ()
    return "&".join(f"{name}={REDACTED}" if eq else REDACTED for name, eq, _ in pairs)


def safe_url(url: str) -> str:
    """`url` without user, password, query or fragment: where credentials hide in a URL."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "[unparsable URL]"
    host = f"[{host}]" if ":" in host else host
    return urlunsplit((parts.scheme, f"{host}{port}", parts.path.rstrip("/"), "", ""))
