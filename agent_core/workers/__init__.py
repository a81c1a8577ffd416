"""Workers: the step logic of an agent (ReAct, function calling, planner, custom)."""

from agent_core.workers._plan import Plan, PlanError, PlanItem, parse_plan
from agent_core.workers.base import BaseAgentWorker
from agent_core.workers.custom import CustomSimpleAgentWorker
from agent_core.workers.function_calling import FunctionCallingAgentWorker
from agent_core.workers.multimodal_react import MultimodalReActAgentWorker
from agent_core.workers.planner import PlannerAgentWorker, SubAgent
from agent_core.workers.query_pipeline import PipelineReply, QueryPipelineAgentWorker
from agent_core.workers.react import ReActAgentWorker

__all__ = [
    "BaseAgentWorker",
    "CustomSimpleAgentWorker",
    "FunctionCallingAgentWorker",
    "MultimodalReActAgentWorker",
    "PipelineReply",
    "Plan",
    "PlanError",
    "PlanItem",
    "PlannerAgentWorker",
    "QueryPipelineAgentWorker",
    "ReActAgentWorker",
    "SubAgent",
    "parse_plan",
]
