"""`AgentSpec`: a serialisable description of an agent, from which a runner is built.

Tasks record the spec they run with, so a restarted app can rebuild the worker of an active
task. A spec never holds a key: keys come from the environment (or the caller) at build time.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_core.errors import UserError
from agent_core.llms.base import LLM
from agent_core.llms.pricing import PriceTable
from agent_core.llms.scripted import HumanLLM
from agent_core.parallel import DEFAULT_MAX_CONCURRENCY, ParallelAgentRunner
from agent_core.store.base import Store
from agent_core.tools.base import BaseTool
from agent_core.tools.workspace import Workspace
from agent_core.workers.base import BaseAgentWorker

__all__ = ["DEFAULT_MODELS", "AgentSpec", "ProviderName", "ToolName", "WorkerKind"]

WorkerKind = Literal["react", "function_calling", "planner"]
ProviderName = Literal["demo", "human", "openai", "anthropic"]
ToolName = Literal["arithmetic", "calculator", "files", "python", "image"]
SubAgentName = Literal["code", "file", "image"]

WORKSPACES_ENV = "STEPWISE_WORKSPACES"
"""Overrides the default folder of task workspaces (tests and deployments set it)."""

DEFAULT_MODELS: dict[str, str] = {
    "demo": "demo (scripted)",
    "human": "you (typed replies)",
    "openai": "gpt-4o-mini",
    "anthropic": "claude-sonnet-5",
}


class AgentSpec(BaseModel):
    """Which worker, model and tools an agent has; JSON-serialisable and key-free.

    `provider="demo"` is the scripted demo model: it plays the built-in scenarios' replies
    and needs no key. `provider="human"` makes a person type each model reply ("you are the
    model"). `base_url` points `openai` at any OpenAI-compatible server.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "agent"
    worker: WorkerKind = "react"
    provider: ProviderName = "demo"
    model: str = ""
    """Empty means the provider's default (`DEFAULT_MODELS`)."""
    base_url: str | None = None
    tools: tuple[ToolName, ...] = ("arithmetic",)
    sub_agents: tuple[SubAgentName, ...] = ("code", "file", "image")
    """The planner's sub-agents (planner only)."""
    tool_approval: bool = False
    max_iterations: int = Field(default=10, ge=1, le=1000)
    workspace: str = Field(default_factory=lambda: os.environ.get(WORKSPACES_ENV, "workspaces"))
    """Folder holding one workspace folder per task."""

    @property
    def model_name(self) -> str:
        """The model this spec uses."""
        return self.model or DEFAULT_MODELS[self.provider]

    @property
    def is_demo(self) -> bool:
        """Whether the model is the scripted demo model."""
        return self.provider == "demo"

    def build_llm(self, *, api_key: str | None = None, prices: PriceTable | None = None) -> LLM:
        """The chat model; `api_key` (else the environment) authenticates real providers."""
        if self.provider == "demo":
            from agent_core.demos import demo_llm

            return demo_llm()
        if self.provider == "human":
            return HumanLLM()
        if self.provider == "openai":
            from agent_core.llms.openai import OpenAILLM

            return OpenAILLM(
                self.model_name, api_key=api_key, base_url=self.base_url, prices=prices
            )
        from agent_core.llms.anthropic import AnthropicLLM

        return AnthropicLLM(self.model_name, api_key=api_key, base_url=self.base_url, prices=prices)

    def build_tools(self, llm: LLM) -> list[BaseTool]:
        """The tools the spec names, on this spec's workspace."""
        from agent_core.tools.arithmetic import arithmetic_tools
        from agent_core.tools.calculator import calculator_tool
        from agent_core.tools.files import file_tools
        from agent_core.tools.image import image_tool
        from agent_core.tools.python import python_tool

        workspace = Workspace(self.workspace)
        builders: dict[str, Any] = {
            "arithmetic": arithmetic_tools,
            "calculator": lambda: [calculator_tool()],
            "files": lambda: file_tools(workspace),
            "python": lambda: [python_tool(workspace)],
            "image": lambda: [image_tool(workspace, llm=llm)],
        }
        return [tool for name in dict.fromkeys(self.tools) for tool in builders[name]()]

    def build_worker(
        self, *, api_key: str | None = None, prices: PriceTable | None = None
    ) -> BaseAgentWorker:
        """The worker this spec describes, with a fresh model client."""
        llm = self.build_llm(api_key=api_key, prices=prices)
        if self.worker == "planner":
            from agent_core.workers.planner import PlannerAgentWorker
            from agent_core.workers.subagents import sub_agents

            if not self.sub_agents:
                raise UserError("a planner needs at least one sub-agent (code, file or image)")
            options = {"max_iterations": self.max_iterations}
            agents = sub_agents(list(self.sub_agents), llm, Workspace(self.workspace), **options)
            return PlannerAgentWorker(llm, agents)
        options = {"max_iterations": self.max_iterations, "tool_approval": self.tool_approval}
        if self.worker == "function_calling":
            from agent_core.workers.function_calling import FunctionCallingAgentWorker

            return FunctionCallingAgentWorker(self.build_tools(llm), llm, **options)
        from agent_core.workers.react import ReActAgentWorker

        return ReActAgentWorker(self.build_tools(llm), llm, **options)

    def build_runner(
        self,
        *,
        store: Store | None = None,
        api_key: str | None = None,
        prices: PriceTable | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    ) -> ParallelAgentRunner:
        """A runner for this spec; its tasks record the spec.

        Demo runners keep no conversation between tasks: the scripted model plays each
        scenario from its start.
        """
        return ParallelAgentRunner(
            self.build_worker(api_key=api_key, prices=prices),
            store=store,
            max_concurrency=max_concurrency,
            conversation_id=None if self.provider in ("demo", "human") else f"spec:{self.name}",
            spec=self.model_dump(mode="json"),
        )
