"""The control plane: services and tasks in SQLite, hop routing, and its HTTP API."""

from stepwise.services.control_plane.server import ControlPlaneServer
from stepwise.services.control_plane.state import ControlPlaneState

__all__ = ["ControlPlaneServer", "ControlPlaneState"]
