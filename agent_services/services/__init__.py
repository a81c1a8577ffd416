"""Services: agents, tools and people, each consuming its own messages from the queue."""

from agent_services.services.agent import AgentService
from agent_services.services.base import BaseService, HopRequest
from agent_services.services.human import HumanService
from agent_services.services.meta_tool import MetaServiceTool
from agent_services.services.service_tool import ServiceAsTool
from agent_services.services.tool import ToolService

__all__ = [
    "AgentService",
    "BaseService",
    "HopRequest",
    "HumanService",
    "MetaServiceTool",
    "ServiceAsTool",
    "ToolService",
]
