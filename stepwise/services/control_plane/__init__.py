"""The control plane: services and tasks in SQLite or PostgreSQL, hop routing, its HTTP API."""

from stepwise.services.control_plane.server import ControlPlaneServer
from stepwise.services.control_plane.state import ControlPlaneState

__all__ = ["ControlPlaneServer", "ControlPlaneState"]
