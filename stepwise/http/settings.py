"""What both HTTP APIs read before they listen: the token, host names, whether to listen.

No web framework is imported here, so the command and the app read `STEPWISE_API_TOKEN` and
`STEPWISE_ALLOWED_HOSTS` from this one place at no cost.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping

from agent_core.errors import UserError

__all__ = [
    "ALLOWED_HOSTS_ENV",
    "MIN_TOKEN_LENGTH",
    "TOKEN_ENV",
    "allowed_hosts",
    "api_token",
    "check_exposure",
    "is_loopback",
]

TOKEN_ENV = "STEPWISE_API_TOKEN"
"""The environment variable holding the bearer token of `stepwise serve` and the services'
control plane; when it is set, every route but `/health` requires it."""

ALLOWED_HOSTS_ENV = "STEPWISE_ALLOWED_HOSTS"
"""Comma-separated host names the APIs answer to besides loopback names and IP addresses:
the names a server is reached by when exposed (a DNS-rebinding page's name is refused)."""

MIN_TOKEN_LENGTH = 16
"""The shortest token a server listening beyond loopback accepts."""

_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$")


def api_token(environ: Mapping[str, str] | None = None) -> str | None:
    """The token in `$STEPWISE_API_TOKEN` (of `environ`, default the process's); None if unset."""
    return (os.environ if environ is None else environ).get(TOKEN_ENV) or None


def allowed_hosts(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The names in `$STEPWISE_ALLOWED_HOSTS` (of `environ`, default the process's), lowercased.

    Raises:
        UserError: An entry is not a host name (a scheme, a port, a path or a space in it).
    """
    text = (os.environ if environ is None else environ).get(ALLOWED_HOSTS_ENV, "")
    names = {part.strip().lower().rstrip(".") for part in text.split(",")} - {""}
    for name in sorted(names):
        if not _NAME.match(name):
            raise UserError(
                f"{ALLOWED_HOSTS_ENV} holds {name!r}, which is not a host name: list the names"
                " clients reach this server by, comma-separated, without scheme or port"
                " (e.g. stepwise.example.com,stepwise.internal)"
            )
    return frozenset(names)


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token of at least 16 characters.

    Raises:
        UserError: `host` is not a loopback address and no token, or a short one, is set.
    """
    if is_loopback(host):
        return
    if not token:
        raise UserError(
            f"refusing to listen on {host} without a token: anyone who can reach it could run"
            f" your agents and read your tasks. Set {TOKEN_ENV} to a long random secret (clients"
            " then send `Authorization: Bearer <token>`), or listen on 127.0.0.1"
        )
    if len(token) < MIN_TOKEN_LENGTH:
        raise UserError(
            f"refusing to listen on {host} with a {len(token)}-character token: a server beyond"
            f" this machine needs a token of at least {MIN_TOKEN_LENGTH} characters, which no one"
            f" can guess. Set {TOKEN_ENV} to a long random secret (`openssl rand -hex 32`), or"
            " listen on 127.0.0.1"
        )
