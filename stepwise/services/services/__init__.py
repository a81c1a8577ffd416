"""Services: agents, tools and people, each consuming its own messages from the queue."""

from stepwise.services.services.agent import AgentService
from stepwise.services.services.base import BaseService, HopRequest
from stepwise.services.services.human import HumanService
from stepwise.services.services.meta_tool import MetaServiceTool
from stepwise.services.services.service_tool import ServiceAsTool
from stepwise.services.services.tool import ToolService

__all__ = [
    "AgentService",
    "BaseService",
    "HopRequest",
    "HumanService",
    "MetaServiceTool",
    "ServiceAsTool",
    "ToolService",
]
