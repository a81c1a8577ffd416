"""The planner's specialised sub-agents: code, file and image, each a ReAct agent on tools.

They share the outer task's workspace: a file the file agent writes, the code agent can read.
"""

from __future__ import annotations

from typing import Any

from agent_core.errors import UserError
from agent_core.llms.base import LLM
from agent_core.tools.files import file_tools
from agent_core.tools.image import image_tool
from agent_core.tools.python import python_tool
from agent_core.tools.workspace import Workspace
from agent_core.workers.planner import SubAgent
from agent_core.workers.react import ReActAgentWorker

__all__ = ["SUB_AGENT_KINDS", "code_agent", "file_agent", "image_agent", "sub_agents"]

SUB_AGENT_KINDS = ("code", "file", "image")


def code_agent(llm: LLM, workspace: Workspace, **worker_options: Any) -> SubAgent:
    """Writes Python and runs it in the sandbox, with the workspace's files at hand."""
    tools = [python_tool(workspace), *file_tools(workspace)]
    return SubAgent(
        "Writes Python code and runs it in a sandbox whose working folder holds the task's "
        "files; good for computing, transforming files and generating pages.",
        ReActAgentWorker(tools, llm, **worker_options),
    )


def file_agent(llm: LLM, workspace: Workspace, **worker_options: Any) -> SubAgent:
    """Reads, writes and lists the task's files."""
    return SubAgent(
        "Reads, writes and lists text files in the task's workspace; good for writing "
        "text (notes, poems, reports) to a file.",
        ReActAgentWorker(file_tools(workspace), llm, **worker_options),
    )


def image_agent(
    llm: LLM, workspace: Workspace, *, openai_client: Any | None = None, **worker_options: Any
) -> SubAgent:
    """Draws pictures: OpenAI Images when a client is given, else SVG drawn by `llm`."""
    tool = image_tool(workspace, llm=llm, openai_client=openai_client)
    return SubAgent(
        "Draws a picture from a description and saves it in the task's workspace (SVG, or "
        "PNG when an images model is configured).",
        ReActAgentWorker([tool], llm, **worker_options),
    )


def sub_agents(
    kinds: list[str], llm: LLM, workspace: Workspace, **worker_options: Any
) -> dict[str, SubAgent]:
    """The named sub-agents (`code`, `file`, `image`), all on `llm`."""
    builders = {"code": code_agent, "file": file_agent, "image": image_agent}
    unknown = sorted(set(kinds) - builders.keys())
    if unknown:
        raise UserError(f"unknown sub-agents {unknown}; choose from {list(builders)}")
    return {kind: builders[kind](llm, workspace, **worker_options) for kind in kinds}
