"""Stepwise over HTTP: the Execute Agent API, the Agent Protocol and Stepwise's extensions.

A client of `agent_core` like the app; `agent_core` never imports it.
"""

from stepwise.server.app import create_app
from stepwise.server.settings import ServerSettings

__all__ = ["ServerSettings", "create_app"]
