"""Moved to `stepwise.http.security`, which both HTTP APIs share; this name stays for a release."""

from stepwise.http.security import OPEN_PATHS, GateMiddleware

__all__ = ["OPEN_PATHS", "GateMiddleware"]
