"""What both HTTP APIs read before they listen: the API token, and whether to listen at all.

No web framework is imported here, so the command and the app read `STEPWISE_API_TOKEN`
from this one place at no cost.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping

from agent_core.errors import UserError

__all__ = ["TOKEN_ENV", "api_token", "check_exposure", "is_loopback"]

TOKEN_ENV = "STEPWISE_API_TOKEN"
"""The environment variable holding the bearer token of `stepwise serve` and the services'
control plane; when it is set, every route but `/health` requires it."""


def api_token(environ: Mapping[str, str] | None = None) -> str | None:
    """The token in `$STEPWISE_API_TOKEN` (of `environ`, default the process's); None if unset."""
    return (os.environ if environ is None else environ).get(TOKEN_ENV) or None


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token.

    Raises:
        UserError: `host` is not a loopback address and no token is set.
    """
    if token or is_loopback(host):
        return
    raise UserError(
        f"refusing to listen on {host} without a token: anyone who can reach it could run your"
        f" agents and read your tasks. Set {TOKEN_ENV} to a long random secret (clients then"
        " send `Authorization: Bearer <token>`), or listen on 127.0.0.1"
    )
