"""Service names: what a name may be, checked wherever one arrives.

A service's name is its message type, so it becomes part of a Redis key
(`<prefix><name>`), routes every hop sent to it, and is printed in logs and on the
Services page. A name is 1 to 64 letters, digits, `_` or `-`, starting with a letter or a
digit: nothing path-like, no `.` or `:` (the queue's own keys use them: reply inboxes are
`<service>.replies.<id>`, dead letters `dead:<type>`), and none of the reserved names.
"""

from __future__ import annotations

import re

from stepwise.services.errors import InvalidServiceNameError
from stepwise.services.messages import CONTROL_PLANE

__all__ = ["MAX_SERVICE_NAME", "RESERVED_SERVICE_NAMES", "check_service_name", "is_service_name"]

MAX_SERVICE_NAME = 64
"""The longest service name, in characters."""

RESERVED_SERVICE_NAMES = frozenset({CONTROL_PLANE, "default"})
"""Message types the system consumes itself (`default`: a message that names no type)."""

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_HINT = (
    f"use 1 to {MAX_SERVICE_NAME} letters, digits, '_' or '-', starting with a letter or a "
    "digit (e.g. secret_fact_agent)"
)


def check_service_name(name: object) -> str:
    """`name`, when it may name a service.

    Raises:
        InvalidServiceNameError: It is empty, too long, reserved, or holds a character
            outside the safe set (code `invalid_service_name`; 422 over the API).
    """
    if not isinstance(name, str) or not name:
        raise _invalid("a service needs a name", name)
    shown = repr(name[:MAX_SERVICE_NAME]) + ("…" if len(name) > MAX_SERVICE_NAME else "")
    if len(name) > MAX_SERVICE_NAME:
        raise _invalid(
            f"the service name {shown} is {len(name)} characters, over {MAX_SERVICE_NAME}", name
        )
    if _SAFE.fullmatch(name) is None:
        raise _invalid(f"the service name {shown} holds characters a name cannot have", name)
    if name.casefold() in RESERVED_SERVICE_NAMES:
        reserved = ", ".join(sorted(RESERVED_SERVICE_NAMES))
        raise _invalid(f"{shown} is reserved ({reserved}): no service may take it", name)
    return name


def is_service_name(name: object) -> bool:
    """Whether `name` may name a service (a record stored before names were checked may not)."""
    try:
        check_service_name(name)
    except InvalidServiceNameError:
        return False
    return True


def _invalid(message: str, name: object) -> InvalidServiceNameError:
    size = len(name) if isinstance(name, str) else 0
    return InvalidServiceNameError(
        message, hint=_HINT, params={"limit": MAX_SERVICE_NAME, "size": size}
    )
