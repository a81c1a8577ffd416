"""Workers: the step logic of an agent (ReAct, custom, and more to come)."""

from agent_core.workers.base import BaseAgentWorker
from agent_core.workers.custom import CustomSimpleAgentWorker
from agent_core.workers.function_calling import FunctionCallingAgentWorker
from agent_core.workers.react import ReActAgentWorker

__all__ = [
    "BaseAgentWorker",
    "CustomSimpleAgentWorker",
    "FunctionCallingAgentWorker",
    "ReActAgentWorker",
]
