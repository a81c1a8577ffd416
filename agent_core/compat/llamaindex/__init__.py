"""LlamaIndex 0.12's agent classes (`ReActAgent`, `FunctionCallingAgent`, ...) on Stepwise.

Code written against LlamaIndex's lower-level agent API runs by changing its imports. These
classes are runners with a worker chosen for you; nothing below this package imports it.
`PromptTemplate` is LlamaIndex's prompt template, which `ReActAgent.update_prompts` takes;
`agent_core.compat.llamaindex.instrumentation` is `llama_index.core.instrumentation`: its
dispatchers hear every runner's steps and chats.
"""

from agent_core.compat.llamaindex.agents import FunctionCallingAgent, ReActAgent
from agent_core.compat.llamaindex.prompts import PromptTemplate
from agent_core.compat.llamaindex.structured_planner import StructuredPlannerAgent

__all__ = ["FunctionCallingAgent", "PromptTemplate", "ReActAgent", "StructuredPlannerAgent"]
