"""The quickstart's two agents as agent targets, for `stepwise services up services.toml`.

`secret_fact_agent(llm)` and `dumb_fact_agent(llm)` are what `agent = "file.py:attr"` names:
Stepwise calls them with the model the file's `model` setting chooses. With the demo model
(which only plays the app's built-in scenarios) they use the quickstart's scripted models, so
the file runs offline; with a real one (`model = "openai:gpt-4o-mini"`) they use it.
"""

from __future__ import annotations

import services_quickstart as quickstart  # A sibling module: Stepwise puts this folder on sys.path.

from agent_core.demos import DEMO_MODEL_NAME
from agent_core.llms import LLM
from agent_core.tools import FunctionTool
from agent_core.workers import FunctionCallingAgentWorker


def secret_fact_agent(llm: LLM) -> FunctionCallingAgentWorker:
    """An agent with one tool, `get_the_secret_fact`."""
    if llm.model == DEMO_MODEL_NAME:
        llm = quickstart.scripted_llms().secret_agent
    tool = FunctionTool.from_defaults(fn=quickstart.get_the_secret_fact)
    return FunctionCallingAgentWorker.from_tools([tool], llm=llm)


def dumb_fact_agent(llm: LLM) -> FunctionCallingAgentWorker:
    """An agent with no tools that tells dumb facts."""
    if llm.model == DEMO_MODEL_NAME:
        llm = quickstart.scripted_llms().dumb_agent
    return FunctionCallingAgentWorker.from_tools([], llm=llm)
