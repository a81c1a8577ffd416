"""Workers: the step logic of an agent (ReAct, function calling, planner, custom)."""

from agent_core.workers._plan import (
    Plan,
    PlanError,
    PlanItem,
    extract_plan_json,
    parse_plan,
    validate_plan,
)
from agent_core.workers.base import BaseAgentWorker
from agent_core.workers.custom import CustomSimpleAgentWorker
from agent_core.workers.fn import FnAgentWorker
from agent_core.workers.function_calling import FunctionCallingAgentWorker
from agent_core.workers.multimodal_react import MultimodalReActAgentWorker
from agent_core.workers.planner import PlannerAgentWorker, SubAgent
from agent_core.workers.query_pipeline import PipelineReply, QueryPipelineAgentWorker
from agent_core.workers.react import ReActAgentWorker
from agent_core.workers.react_formatter import ReActChatFormatter
from agent_core.workers.react_output_parser import ReActOutputParser

__all__ = [
    "BaseAgentWorker",
    "CustomSimpleAgentWorker",
    "FnAgentWorker",
    "FunctionCallingAgentWorker",
    "MultimodalReActAgentWorker",
    "PipelineReply",
    "Plan",
    "PlanError",
    "PlanItem",
    "PlannerAgentWorker",
    "QueryPipelineAgentWorker",
    "ReActAgentWorker",
    "ReActChatFormatter",
    "ReActOutputParser",
    "SubAgent",
    "extract_plan_json",
    "parse_plan",
    "validate_plan",
]
