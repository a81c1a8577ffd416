"""Launchers: the whole system in one process (`LocalLauncher`), or each part as a server."""

from stepwise.services.launchers.local import LocalLauncher
from stepwise.services.launchers.server import ServerLauncher, serve_control_plane, serve_service

__all__ = ["LocalLauncher", "ServerLauncher", "serve_control_plane", "serve_service"]
