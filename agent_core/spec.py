"""`AgentSpec`: a serialisable description of an agent, from which a runner is built.

Tasks record the spec they run with, so a restarted app can rebuild the worker of an active
task. A spec never holds a key: keys come from the environment (or the caller) at build time.

A spec can name the user's own agent (`agent`), and tools modules and MCP servers (in `tools`),
registered with `stepwise ui --agent/--tools/--mcp` or `[tool.stepwise]` (see
`agent_core.user_code.registry`). The spec records where each was loaded from (`agent_target`,
`tool_modules`, `mcp_servers`: a module, or a server's command or URL), so a task is rebuilt
from its record even where the name is no longer registered (a recorded MCP server is started
from its recorded command).

This is the composition root, and it reads no global: the registry that knows the user's names
is passed in, to validation (`AgentSpec.from_registry(registry, ...)`, or pydantic's
`context={"registry": registry}`) and to `build_runner(registry=...)`. The faces pass
`agent_core.user_code.default_registry()`, the working folder's.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from agent_core.errors import UserError
from agent_core.llms.base import LLM
from agent_core.llms.catalog import PROVIDERS, ProviderName, infer_model
from agent_core.llms.pricing import PriceTable
from agent_core.runtime.fork import provide_agent_names
from agent_core.runtime.parallel import DEFAULT_MAX_CONCURRENCY, ParallelAgentRunner
from agent_core.store.base import Store
from agent_core.tools.base import BaseTool
from agent_core.tools.names import BUILTIN_TOOLS, ToolName
from agent_core.tools.workspace import Workspace
from agent_core.user_code.registry import UserCodeRegistry, check_entry, default_registry
from agent_core.workers.base import BaseAgentWorker

__all__ = [
    "DEFAULT_MODELS",
    "REGISTRY_CONTEXT",
    "AgentSpec",
    "ProviderName",
    "ToolName",
    "WorkerKind",
]

WorkerKind = Literal["react", "multimodal_react", "function_calling", "planner"]
SubAgentName = Literal["code", "file", "image"]

REGISTRY_CONTEXT = "registry"
"""The key of the `UserCodeRegistry` in a validation context: `AgentSpec.model_validate(data,
context={REGISTRY_CONTEXT: registry})` looks the user's agent and tools names up in it."""

WORKSPACES_ENV = "STEPWISE_WORKSPACES"
"""Overrides the default folder of task workspaces (tests and deployments set it)."""

DEFAULT_MODELS: dict[str, str] = {name: entry.model_label for name, entry in PROVIDERS.items()}
"""The model each provider uses when none is named, as shown (from `agent_core.llms.catalog`)."""


class AgentSpec(BaseModel):
    """Which worker, model and tools an agent has; JSON-serialisable and key-free.

    `provider="demo"` is the scripted demo model: it plays the built-in scenarios' replies
    and needs no key. `provider="human"` makes a person type each model reply ("you are the
    model"). `base_url` points `openai` at any OpenAI-compatible server.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "agent"
    worker: WorkerKind = "react"
    """The built-in worker (ignored when `agent` names the user's own)."""
    agent: str | None = None
    """The user's own agent, by its registered name; None: the built-in `worker`."""
    agent_target: str | None = Field(default=None, validate_default=True)
    """Where `agent` was loaded from (`file.py:attr`, `package.module:attr`), filled in from the
    registry; the agent is rebuilt from it when its name is no longer registered."""
    provider: ProviderName = "demo"
    model: str = ""
    """Empty means the provider's default (`DEFAULT_MODELS`)."""
    base_url: str | None = None
    tools: tuple[str, ...] = ("arithmetic",)
    """Built-in tools (`ToolName`), the user's registered tools modules and MCP servers (each
    server stands for all its tools), by name; for the built-in workers (the user's own agent
    brings its own tools)."""
    mcp_servers: dict[str, str] = Field(default_factory=dict, validate_default=True)
    """The command or URL of each MCP server in `tools`, filled in from the registry. Before
    `tool_modules`, whose check needs to know which names are servers."""
    tool_modules: dict[str, str] = Field(default_factory=dict, validate_default=True)
    """Where each of the user's tools modules in `tools` was loaded from, filled in from the
    registry."""
    sub_agents: tuple[SubAgentName, ...] = ("code", "file", "image")
    """The planner's sub-agents (planner only)."""
    tool_approval: bool = False
    max_iterations: int = Field(default=10, ge=1, le=1000)
    max_tokens: int | None = Field(default=None, ge=1)
    """The most tokens one model reply may have; None sends no cap (Anthropic keeps its
    required default). A small local model may otherwise write until its context is full."""
    workspace: str = Field(default_factory=lambda: os.environ.get(WORKSPACES_ENV, "workspaces"))
    """Folder holding one workspace folder per task."""

    def __hash__(self) -> int:  # `tool_modules` is a dict: hash the JSON the spec stands for.
        return hash(self.model_dump_json())

    @field_validator("agent_target")
    @classmethod
    def _record_agent_target(cls, target: str | None, info: ValidationInfo) -> str | None:
        agent = info.data.get("agent")
        if agent is None:
            if target is not None:
                raise ValueError("agent_target needs agent: the name of the agent it builds")
            return None
        registry = _registry_of(info)
        if target is None and registry is not None:
            target = registry.agent_target(agent)
        if target is None:
            raise ValueError(_unknown_agent(agent, looked_up=registry is not None))
        try:
            check_entry(agent, target, kind="agent")
        except UserError as exc:  # Not a ValueError: pydantic would not report it as invalid.
            raise ValueError(str(exc)) from None
        return target

    @field_validator("mcp_servers")
    @classmethod
    def _record_mcp_servers(cls, servers: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        tools = info.data.get("tools")
        if tools is None:  # `tools` itself failed validation; that error is reported.
            return servers
        registry = _registry_of(info)
        recorded: dict[str, str] = {}
        for name in dict.fromkeys(tools):
            if name in BUILTIN_TOOLS:
                continue
            spec = servers.get(name)
            if spec is None and registry is not None:
                spec = registry.mcp_server(name)
            if spec is None:
                continue  # A tools module's name, or unknown: `tool_modules` says which.
            try:
                check_entry(name, spec, kind="mcp")
            except UserError as exc:
                raise ValueError(str(exc)) from None
            recorded[name] = spec
        return recorded

    @field_validator("tool_modules")
    @classmethod
    def _record_tool_modules(cls, modules: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        tools = info.data.get("tools")
        if tools is None:  # `tools` itself failed validation; that error is reported.
            return modules
        registry = _registry_of(info)
        servers = info.data.get("mcp_servers") or {}
        recorded: dict[str, str] = {}
        for name in dict.fromkeys(tools):
            if name in BUILTIN_TOOLS or name in servers:
                continue
            module = modules.get(name)
            if module is None and registry is not None:
                module = registry.tools_module(name)
            if module is None:
                raise ValueError(_unknown_tool(name, looked_up=registry is not None))
            recorded[name] = module
        return recorded

    @classmethod
    def from_registry(cls, registry: UserCodeRegistry, /, **fields: Any) -> AgentSpec:
        """A spec whose user agent and tools modules, by name, are looked up in `registry`.

        Raises:
            pydantic.ValidationError: A field is invalid, or a name is not registered there.
        """
        return cls.model_validate(fields, context={REGISTRY_CONTEXT: registry})

    @property
    def uses_user_code(self) -> bool:
        """Whether the worker comes from, or uses tools from, the user's own code or servers."""
        return self.agent is not None or bool(self.tool_modules) or bool(self.mcp_servers)

    @property
    def model_name(self) -> str:
        """The model this spec uses."""
        return self.model or DEFAULT_MODELS[self.provider]

    @property
    def model_ref(self) -> str:
        """The model as one string, "provider:model" ("openai:gpt-4o-mini"), or "demo"."""
        return PROVIDERS[self.provider].model_ref(self.model)

    @property
    def is_demo(self) -> bool:
        """Whether the model is the scripted demo model."""
        return self.provider == "demo"

    def build_llm(self, *, api_key: str | None = None, prices: PriceTable | None = None) -> LLM:
        """The chat model; `api_key` (else the environment) authenticates real providers."""
        return infer_model(
            self.model_ref,
            api_key=api_key,
            base_url=self.base_url,
            prices=prices,
            max_tokens=self.max_tokens,
        )

    def build_tools(self, llm: LLM, *, registry: UserCodeRegistry | None = None) -> list[BaseTool]:
        """The tools the spec names, on this spec's workspace; the user's from `registry`.

        Raises:
            UserCodeError: One of the user's tools modules failed to import, or an MCP server
                could not start (code `mcp_server_failed`).
        """
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
        tools: list[BaseTool] = []
        for name in dict.fromkeys(self.tools):
            if name in builders:
                tools.extend(builders[name]())
            elif name in self.mcp_servers:
                user_code = self._needs(registry, what=f"MCP server {name!r}")
                tools.extend(user_code.mcp_tools(name, spec=self.mcp_servers[name]))
            else:
                user_code = self._needs(registry, what=f"tools module {name!r}")
                tools.extend(user_code.tools_for(name, module=self.tool_modules.get(name)))
        return tools

    def build_worker(
        self,
        *,
        api_key: str | None = None,
        prices: PriceTable | None = None,
        registry: UserCodeRegistry | None = None,
    ) -> BaseAgentWorker:
        """The worker this spec describes, with a fresh model client.

        Args:
            api_key: The provider's key (else the environment's).
            prices: Price overrides for the model.
            registry: Where the user's agent and tools modules are imported from; needed
                when the spec names any (`uses_user_code`). The faces pass
                `agent_core.user_code.default_registry()`.

        Raises:
            UserCodeError: The user's agent or tools failed to import or build.
            UserError: The model cannot be set up (no key), or the spec asks for the impossible.
        """
        llm = self.build_llm(api_key=api_key, prices=prices)
        if self.agent is not None:
            user_code = self._needs(registry, what=f"agent {self.agent!r}")
            return user_code.build_agent(
                self.agent, llm=llm, target=self.agent_target, tool_approval=self.tool_approval
            )
        if self.worker == "planner":
            from agent_core.workers.planner import PlannerAgentWorker
            from agent_core.workers.subagents import sub_agents

            if not self.sub_agents:
                raise UserError("a planner needs at least one sub-agent (code, file or image)")
            # Its sub-agents ask before each tool call too: the planner surfaces their calls.
            options = {"max_iterations": self.max_iterations, "tool_approval": self.tool_approval}
            agents = sub_agents(list(self.sub_agents), llm, Workspace(self.workspace), **options)
            return PlannerAgentWorker(llm, agents)
        options = {"max_iterations": self.max_iterations, "tool_approval": self.tool_approval}
        if self.worker == "function_calling":
            from agent_core.workers.function_calling import FunctionCallingAgentWorker

            tools = self.build_tools(llm, registry=registry)
            return FunctionCallingAgentWorker(tools, llm, **options)
        if self.worker == "multimodal_react":
            from agent_core.workers.multimodal_react import MultimodalReActAgentWorker

            tools = self.build_tools(llm, registry=registry)
            return MultimodalReActAgentWorker(tools, llm, **options)
        from agent_core.workers.react import ReActAgentWorker

        return ReActAgentWorker(self.build_tools(llm, registry=registry), llm, **options)

    def build_runner(
        self,
        *,
        store: Store | None = None,
        api_key: str | None = None,
        prices: PriceTable | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        registry: UserCodeRegistry | None = None,
    ) -> ParallelAgentRunner:
        """A runner for this spec; its tasks record the spec.

        Every task starts a conversation of its own (a thread), whatever the model: one
        task's messages never reach another's prompts unless it continues that task's
        thread (`create_task(continue_from=...)`).
        """
        return ParallelAgentRunner(
            self.build_worker(api_key=api_key, prices=prices, registry=registry),
            store=store,
            max_concurrency=max_concurrency,
            conversation_id=None,
            spec=self.model_dump(mode="json"),
        )

    def _needs(self, registry: UserCodeRegistry | None, *, what: str) -> UserCodeRegistry:
        """`registry`, which building the user's `what` needs."""
        if registry is None:
            raise UserError(
                f"agent spec {self.name!r} runs your own code ({what}): pass registry=, the "
                "UserCodeRegistry that imports it (agent_core.user_code.default_registry() "
                "reads the working folder's [tool.stepwise] and the stepwise command's flags)"
            )
        return registry


def _registry_of(info: ValidationInfo) -> UserCodeRegistry | None:
    """The registry validation was given (`context={REGISTRY_CONTEXT: ...}`), if any."""
    context = info.context if isinstance(info.context, dict) else {}
    registry = context.get(REGISTRY_CONTEXT)
    return registry if isinstance(registry, UserCodeRegistry) else None


def _unknown_agent(agent: str, *, looked_up: bool) -> str:
    if looked_up:
        return (
            f"no agent named {agent!r} is registered: start the app with `stepwise ui "
            f"--agent {agent}=file.py:attr` or add it under [tool.stepwise] agents"
        )
    return (
        f"no agent named {agent!r} is known to this spec: give its agent_target, or build the "
        f"spec from the registry that registers it (AgentSpec.from_registry(registry, "
        f"agent={agent!r}, ...))"
    )


def _unknown_tool(name: str, *, looked_up: bool) -> str:
    builtin = ", ".join(BUILTIN_TOOLS)
    if looked_up:
        return (
            f"unknown tool {name!r}: the built-in tools are {builtin}; register your own with "
            f"`stepwise ui --tools {name}=MODULE` (or an MCP server with --mcp "
            f'{name}="COMMAND ARGS"), or under [tool.stepwise] tools (or mcp)'
        )
    return (
        f"unknown tool {name!r}: the built-in tools are {builtin}; for a tools module of yours "
        f"give its module in tool_modules (an MCP server's command in mcp_servers), or build "
        f"the spec from the registry that registers it (AgentSpec.from_registry(registry, "
        f"tools=(..., {name!r})))"
    )


def _spec_named(name: str, base: dict[str, Any] | None, registry: Any) -> AgentSpec:
    """Registered agent `name` on the model of spec `base`, for `fork_task(agent=name)`."""
    fields = {**(base or {}), "agent": name}
    fields.pop("agent_target", None)  # Filled in from the registry.
    return AgentSpec.from_registry(registry or default_registry(), **fields)


provide_agent_names(_spec_named)
