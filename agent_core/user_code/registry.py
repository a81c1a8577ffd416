"""The user's own agents, tools and MCP servers: a registry of `NAME=TARGET` entries.

Entries come from the project folder (the working folder): `[tool.stepwise]` in
`pyproject.toml` and the top-level keys of `stepwise.toml` (both read; `stepwise.toml` wins),
each with `agents = {name = "target"}`, `tools = {name = "module"}` and
`mcp = {name = "command or URL"}`; and from the `stepwise` command, which passes its
`--agent` / `--tools` / `--mcp` flags in `STEPWISE_AGENTS` / `STEPWISE_TOOLS` /
`STEPWISE_MCP` (JSON objects). The command's entries win over the files' of the same name.

- An agent target is `path/to/file.py:attr` or `package.module:attr`. `attr` is a
  `BaseAgentWorker`, or a factory returning one: called with the model chosen in the app
  when it has one required positional parameter (or, with none required, one named `llm`),
  else with nothing. File paths are relative to the project folder and recorded absolute; a
  file is imported under a unique module name, with its folder on `sys.path` so that it can
  import its siblings.
- A tools module (`package.module` or `path/to/file.py`) gives its `TOOLS` list of
  `BaseTool`s, else a `FunctionTool` for each public function defined in it.
- An MCP server is a command line run in the project folder (`uvx mcp-server-time`), or the
  URL of a streamable-HTTP endpoint; its tools are `agent_core.tools.mcp.McpTool`s. It starts
  when first listed or built, and stays up until the next reload.

One bad entry never breaks the others: listing gives each entry with its loaded object or
its `UserCodeError`, whose `traceback` is the user's own (the loader's frames trimmed).

`reload()` re-reads the project files and re-imports the user's modules without a restart,
and stops every MCP server, so the next use starts it again (a server that died comes back).
A step already running finishes with the code it started with (its worker holds the old
objects; a call to a stopped MCP server fails the step, which runs again on the new one);
runners built afterwards use the new code. Each reload gives a new `generation`,
so a cache of runners keyed by it (the app's) builds new ones. Re-imported are the modules
the entries imported from outside the standard library and site-packages; installed
packages are not, nor modules the user's code first imports later, while a step runs.
"""

from __future__ import annotations

import inspect
import itertools
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from agent_core.adapters import FRAMEWORKS, adapt, framework_of
from agent_core.errors import UserCodeError, UserError
from agent_core.extras import EXTRAS, install_line
from agent_core.llms.base import LLM
from agent_core.tools.base import BaseTool, FunctionTool
from agent_core.user_code._mcp_entries import McpEntry, McpServers
from agent_core.user_code.config import (
    AGENTS_ENV,
    MCP_ENV,
    PROJECT_FILES,
    RELOAD_HINT,
    TOOLS_ENV,
    EntryKind,
    check_entry,
    env_entries,
    is_file_ref,
    parse_entry,
    read_config,
    resolve_target,
)
from agent_core.user_code.imports import forget_user_modules, import_user_module, user_traceback
from agent_core.user_code.shadowing import explain_clash
from agent_core.workers.base import BaseAgentWorker

__all__ = [
    "AGENTS_ENV",
    "MCP_ENV",
    "PROJECT_FILES",
    "TOOLS_ENV",
    "AgentEntry",
    "EntryKind",
    "McpEntry",
    "ToolsEntry",
    "UserCodeRegistry",
    "check_entry",
    "default_registry",
    "generation",
    "parse_entry",
    "reload",
    "resolve_target",
    "tools_from_module",
]

RECORDED = "a task's record"
"""The `source` of an entry loaded from a task's spec because its name is not registered."""

_generations = itertools.count(1)


@dataclass(frozen=True)
class AgentEntry:
    """One registered agent: its worker or factory, or why it could not be loaded."""

    name: str
    target: str
    """As recorded: file paths are absolute."""
    source: str
    """Where it was registered: `--agent`, a project file's path, or `RECORDED`."""
    agent: BaseAgentWorker | Callable[..., Any] | None = None
    error: UserCodeError | None = None

    @property
    def ok(self) -> bool:
        """Whether the target imported and is a worker, a framework's agent or a factory."""
        return self.error is None

    @property
    def framework(self) -> str | None:
        """The framework whose agent the target is ("pydantic-ai", ...), else None.

        None for a worker or a factory too: what a factory returns is known once it is called.
        """
        found = framework_of(self.agent) if self.agent is not None else None
        return found.name if found is not None else None


@dataclass(frozen=True)
class ToolsEntry:
    """One registered tools module: its tools, or why it could not be loaded."""

    name: str
    module: str
    """As recorded: file paths are absolute."""
    source: str
    tools: tuple[BaseTool, ...] = ()
    error: UserCodeError | None = None

    @property
    def ok(self) -> bool:
        """Whether the module imported and gave at least one tool."""
        return self.error is None


def tools_from_module(module: ModuleType) -> list[BaseTool]:
    """A module's `TOOLS` list, else a `FunctionTool` for each public function defined in it.

    Functions the module imported from elsewhere, and `_private` ones, are left out.

    Raises:
        TypeError: `TOOLS` holds something that is not a `BaseTool`, or a function cannot be
            a tool (it takes `*args`, say); the message names it.
    """
    declared = getattr(module, "TOOLS", None)
    if declared is not None:
        tools = list(declared)
        wrong = [repr(tool)[:60] for tool in tools if not isinstance(tool, BaseTool)]
        if wrong:
            raise TypeError(
                "TOOLS must hold BaseTool objects (e.g. FunctionTool.from_defaults(fn=...)); it "
                f"holds {', '.join(wrong)}"
            )
        return tools
    tools = []
    for name, value in vars(module).items():
        if name.startswith("_") or not inspect.isfunction(value):
            continue
        if value.__module__ != module.__name__:
            continue
        try:
            tools.append(FunctionTool.from_defaults(fn=value))
        except TypeError as exc:
            raise TypeError(f"function {name} cannot be a tool: {exc}") from exc
    return tools


def _extra_of_missing(exc: BaseException) -> str | None:
    """The extra that installs the framework a `ModuleNotFoundError` names, if it is one."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.partition(".")[0]
    return next((f.extra for f in FRAMEWORKS if top in EXTRAS[f.extra]), None) or (
        "mcp" if top == "mcp" else None
    )


def _import_error(what: str, target: str, exc: BaseException, project: Path) -> UserCodeError:
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    # An agent's target is module:attr; a tools target is the module (which may end in .py).
    module_ref = target if target.endswith(".py") else target.rpartition(":")[0] or target
    folders = [project, *([Path(module_ref).parent] if is_file_ref(module_ref) else [])]
    clash = explain_clash(exc, folders)
    extra = _extra_of_missing(exc)
    if clash is not None:
        advice = clash
    elif extra is not None:
        advice = f"Your code needs the {extra!r} extra of Stepwise: {install_line(extra)}"
    elif isinstance(exc, ImportError | FileNotFoundError):
        advice = (
            f"A file path is relative to the project folder {project}, and a module must be "
            "importable from it; fix the target or install what is missing"
        )
    else:
        advice = "Your module raised it while being imported; fix it (see the traceback)"
    return UserCodeError(
        f"could not import {what} ({target}): {detail}. {advice}, {RELOAD_HINT}.",
        target=target,
        traceback=user_traceback(exc),
    )


def _resolve_attr(module: ModuleType, attr: str, *, what: str, target: str) -> Any:
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            public = sorted(n for n in vars(module) if not n.startswith("_"))[:20]
            raise UserCodeError(
                f"{what} ({target}): there is no {attr!r} in {target.rpartition(':')[0]}; it "
                f"defines {', '.join(public) or 'nothing public'}. Fix the target, "
                f"{RELOAD_HINT}.",
                target=target,
            )
        value = getattr(value, part)
    return value


def _factory_arguments(
    factory: Callable[..., Any], llm: LLM, *, target: str
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """How to call a factory: with the model alone (positionally or as `llm=`), or nothing."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # Builtins without a signature: call with nothing.
        return (), {}
    params = list(signature.parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in params if p.default is p.empty and p.kind in positional]
    required_kw = [p for p in params if p.default is p.empty and p.kind is p.KEYWORD_ONLY]
    if len(required) == 1 and not required_kw:
        return (llm,), {}
    if not required and not required_kw:
        takes_llm = any(p.name == "llm" and p.kind is not p.POSITIONAL_ONLY for p in params)
        return ((), {"llm": llm}) if takes_llm else ((), {})
    raise UserCodeError(
        f"agent factory {target} takes {signature}: a factory takes the model as its one "
        f"required argument (def build_agent(llm): ...) or nothing. Change it, {RELOAD_HINT}.",
        target=target,
    )


def _adapted(entry: AgentEntry, agent: Any, *, tool_approval: bool) -> BaseAgentWorker | None:
    """A framework's agent wrapped as a worker; None when `agent` is no framework's."""
    try:
        if framework_of(agent) is None:
            return None
        return adapt(agent, tool_approval=tool_approval)
    except UserError as exc:
        raise UserCodeError(
            f"your agent {entry.name!r} ({entry.target}): {exc}. Fix it, {RELOAD_HINT}.",
            target=entry.target,
        ) from exc


def _build_worker(entry: AgentEntry, llm: LLM, *, tool_approval: bool) -> BaseAgentWorker:
    if entry.error is not None:
        raise entry.error
    agent = entry.agent
    if isinstance(agent, BaseAgentWorker):
        return agent  # Workers hold no task state: one instance serves every runner.
    adapted = _adapted(entry, agent, tool_approval=tool_approval)
    if adapted is not None:
        return adapted
    assert agent is not None
    args, kwargs = _factory_arguments(agent, llm, target=entry.target)
    try:
        worker = agent(*args, **kwargs)
    except Exception as exc:
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise UserCodeError(
            f"your agent {entry.name!r} ({entry.target}) failed to build: {detail}. Fix it "
            f"(see the traceback), {RELOAD_HINT}.",
            target=entry.target,
            traceback=user_traceback(exc),
        ) from exc
    adapted = _adapted(entry, worker, tool_approval=tool_approval)
    if adapted is not None:
        return adapted
    if not isinstance(worker, BaseAgentWorker):
        raise UserCodeError(
            f"your agent {entry.name!r} ({entry.target}) gave a {type(worker).__name__}, not a "
            "worker: return a BaseAgentWorker (e.g. an instance of a CustomSimpleAgentWorker "
            "subclass), a pydantic-ai or OpenAI Agents SDK Agent, or a compiled LangGraph "
            f"graph. Fix it, {RELOAD_HINT}.",
            target=entry.target,
        )
    return worker


class UserCodeRegistry:
    """The user's agents, tools modules and MCP servers, loaded on first use and on `reload()`.

    Args:
        project: The project folder: its `pyproject.toml` / `stepwise.toml` are read, and
            relative file paths are resolved against it (default: the working folder).
        agents: The command line's agents, `{name: target}`; they win over the files'.
        tools: The command line's tools modules, `{name: module}`; they win likewise.
        mcp: The command line's MCP servers, `{name: command or URL}`; they win likewise.
        problems: Errors found before the registry was made (a malformed environment).
    """

    def __init__(
        self,
        *,
        project: str | Path | None = None,
        agents: Mapping[str, str] | None = None,
        tools: Mapping[str, str] | None = None,
        mcp: Mapping[str, str] | None = None,
        problems: Iterable[UserCodeError] = (),
    ) -> None:
        self.project = Path(project if project is not None else Path.cwd()).resolve()
        self._cli = {"agent": dict(agents or {}), "tools": dict(tools or {})}
        self._cli["mcp"] = dict(mcp or {})
        self._env_problems = tuple(problems)
        self._lock = threading.RLock()
        self._servers = McpServers(self.project)
        self._read()

    @classmethod
    def from_environment(
        cls, *, project: str | Path | None = None, environ: Mapping[str, str] | None = None
    ) -> UserCodeRegistry:
        """The project files' entries and those in `$STEPWISE_AGENTS` / `_TOOLS` / `_MCP`."""
        environ = os.environ if environ is None else environ
        problems: list[UserCodeError] = []
        agents = env_entries(AGENTS_ENV, environ, problems)
        tools = env_entries(TOOLS_ENV, environ, problems)
        mcp = env_entries(MCP_ENV, environ, problems)
        return cls(project=project, agents=agents, tools=tools, mcp=mcp, problems=problems)

    def _read(self) -> None:
        with self._lock:
            self._config = read_config(
                self.project,
                agents=self._cli["agent"],
                tools=self._cli["tools"],
                mcp=self._cli["mcp"],
            )
            self._agents: dict[str, AgentEntry] = {}
            self._tools: dict[str, ToolsEntry] = {}
            self._recorded: dict[tuple[EntryKind, str], AgentEntry | ToolsEntry] = {}
            self._generation = next(_generations)

    @property
    def generation(self) -> int:
        """A number that changes on every `reload()`: key caches of built runners by it."""
        return self._generation

    @property
    def problems(self) -> tuple[UserCodeError, ...]:
        """What is wrong with the configuration itself (an unreadable file, a bad name)."""
        return self._env_problems + tuple(self._config.problems)

    def agent_target(self, name: str) -> str | None:
        """The registered target of agent `name`, as recorded (nothing is imported)."""
        found = self._config.agents.get(name)
        return found[0] if found else None

    def tools_module(self, name: str) -> str | None:
        """The registered module of tools `name`, as recorded (nothing is imported)."""
        found = self._config.tools.get(name)
        return found[0] if found else None

    def mcp_server(self, name: str) -> str | None:
        """The registered command or URL of MCP server `name` (nothing is started)."""
        found = self._config.mcp.get(name)
        return found[0] if found else None

    def agents(self) -> tuple[AgentEntry, ...]:
        """Every registered agent, imported: each with its worker or factory, or its error."""
        return tuple(self._agent(name) for name in self._config.names("agent"))

    def tool_modules(self) -> tuple[ToolsEntry, ...]:
        """Every registered tools module, imported: each with its tools, or its error."""
        return tuple(self._tools_entry(name) for name in self._config.names("tools"))

    def mcp_servers(self) -> tuple[McpEntry, ...]:
        """Every registered MCP server, started: each with its tools, or its error."""
        entries = {e.name: e for e in self._servers.entries(self._config.mcp)}
        for (kind, name), error in self._config.malformed.items():
            if kind == "mcp":
                entries[name] = McpEntry(name, error.target, "config", error=error)
        return tuple(entries[name] for name in sorted(entries))

    def names(self, kind: EntryKind) -> list[str]:
        """The registered names of `kind`, sorted: nothing is imported or started."""
        return self._config.names(kind)

    def entry(
        self, kind: EntryKind, name: str, *, load: bool = True
    ) -> AgentEntry | ToolsEntry | McpEntry | None:
        """Entry `name` of `kind`, loaded on first ask: imported (agents, tools) or started (MCP).

        Only this entry is loaded: listing the others imports none of their code. With
        `load=False`, only what runs nothing is given: a malformed entry, or one loaded
        already; else None.

        Raises:
            KeyError: No entry of `kind` is registered under `name`.
        """
        if name not in self._config.names(kind):
            raise KeyError(name)
        if not load and not self._loaded(kind, name):
            return None
        if kind == "agent":
            return self._agent(name)
        if kind == "tools":
            return self._tools_entry(name)
        malformed = self._config.malformed.get(("mcp", name))
        if malformed is not None:
            return McpEntry(name, malformed.target, "config", error=malformed)
        (entry,) = self._servers.entries({name: self._config.mcp[name]})
        return entry

    def _loaded(self, kind: EntryKind, name: str) -> bool:
        """Whether entry `name` is malformed, or was loaded: giving it runs nothing."""
        if (kind, name) in self._config.malformed:
            return True
        with self._lock:
            if kind == "mcp":
                return self._servers.has(name)
            return name in (self._agents if kind == "agent" else self._tools)

    def build_agent(
        self, name: str, *, llm: LLM, target: str | None = None, tool_approval: bool = False
    ) -> BaseAgentWorker:
        """A worker of agent `name` on `llm`; from `target` when `name` is not registered.

        `tool_approval` makes a framework's agent ask before each tool call (a worker of
        yours decides that itself).

        Raises:
            UserCodeError: The agent failed to import or to build.
            UserError: `name` is not registered and no target was recorded.
        """
        if name in self._config.names("agent"):
            return _build_worker(self._agent(name), llm, tool_approval=tool_approval)
        if target is None:
            raise UserError(
                f"no agent named {name!r} is registered: start the app with `stepwise ui "
                f"--agent {name}=file.py:attr` or add it under [tool.stepwise] agents"
            )
        entry = self._from_record("agent", name, target)
        assert isinstance(entry, AgentEntry)
        return _build_worker(entry, llm, tool_approval=tool_approval)

    def tools_for(self, name: str, *, module: str | None = None) -> list[BaseTool]:
        """The tools of module `name`; from `module` when `name` is not registered.

        Raises:
            UserCodeError: The module failed to import, or gave no tools.
            UserError: `name` is not registered and no module was recorded.
        """
        if name in self._config.names("tools"):
            entry: AgentEntry | ToolsEntry = self._tools_entry(name)
        elif module is None:
            raise UserError(
                f"no tools module named {name!r} is registered: start the app with `stepwise "
                f"ui --tools {name}=MODULE` or add it under [tool.stepwise] tools"
            )
        else:
            entry = self._from_record("tools", name, module)
        assert isinstance(entry, ToolsEntry)
        if entry.error is not None:
            raise entry.error
        return list(entry.tools)

    def mcp_tools(self, name: str, *, spec: str | None = None) -> list[BaseTool]:
        """The tools of MCP server `name`, started if need be; from `spec` when not registered.

        Raises:
            UserCodeError: The server cannot be used (code `mcp_server_failed`), or its entry
                is malformed.
            UserError: `name` is not registered and no spec was recorded.
        """
        registered = self.mcp_server(name)
        if registered is not None:
            return self._servers.tools(name, registered, named=True)
        malformed = self._config.malformed.get(("mcp", name))
        if malformed is not None:
            raise malformed
        if spec is None:
            raise UserError(
                f"no MCP server named {name!r} is registered: start the app with `stepwise ui "
                f'--mcp {name}="COMMAND ARGS"` or add it under [tool.stepwise] mcp'
            )
        return self._servers.tools(name, spec, named=False)

    def reload(self) -> int:
        """Re-read the project files, forget the user's modules, stop the MCP servers.

        The next listing or build imports the user's code again and starts the servers anew;
        the new generation is returned. Objects built before (the workers of running steps)
        keep the code they were built with.
        """
        with self._lock:
            forget_user_modules()
            self._servers.close_all()
            self._read()
            return self._generation

    def close(self) -> None:
        """Stop the MCP servers this registry started (a reload starts them again)."""
        self._servers.close_all()

    # -- loading

    def _agent(self, name: str) -> AgentEntry:
        with self._lock:
            if name not in self._agents:
                malformed = self._config.malformed.get(("agent", name))
                if malformed is not None:
                    entry = AgentEntry(name, malformed.target, "config", error=malformed)
                else:
                    entry = self._load_agent(name, *self._config.agents[name])
                self._agents[name] = entry
            return self._agents[name]

    def _tools_entry(self, name: str) -> ToolsEntry:
        with self._lock:
            if name not in self._tools:
                malformed = self._config.malformed.get(("tools", name))
                if malformed is not None:
                    entry = ToolsEntry(name, malformed.target, "config", error=malformed)
                else:
                    entry = self._load_tools(name, *self._config.tools[name])
                self._tools[name] = entry
            return self._tools[name]

    def _from_record(self, kind: EntryKind, name: str, target: str) -> AgentEntry | ToolsEntry:
        with self._lock:
            found = self._recorded.get((kind, target))
            if found is None:
                load = self._load_agent if kind == "agent" else self._load_tools
                found = load(name, target, RECORDED)
                self._recorded[(kind, target)] = found
            return found

    def _load_agent(self, name: str, target: str, source: str) -> AgentEntry:
        what = f"agent {name!r}"
        try:
            check_entry(name, target, kind="agent")
        except UserError as exc:
            return AgentEntry(name, target, source, error=UserCodeError(str(exc), target=target))
        module_ref, _, attr = target.rpartition(":")
        try:
            module = import_user_module(module_ref, self.project)
        except Exception as exc:  # Whatever the user's module raised on import.
            error = _import_error(what, target, exc, self.project)
            return AgentEntry(name, target, source, error=error)
        try:
            agent = _resolve_attr(module, attr, what=what, target=target)
        except UserCodeError as exc:
            return AgentEntry(name, target, source, error=exc)
        try:
            framework = framework_of(agent)
        except UserError as exc:
            message = f"{what} ({target}): {exc}. Fix it, {RELOAD_HINT}."
            error = UserCodeError(message, target=target)
            return AgentEntry(name, target, source, error=error)
        if framework is None and not isinstance(agent, BaseAgentWorker) and not callable(agent):
            error = UserCodeError(
                f"{what} ({target}) is a {type(agent).__name__}, not an agent: point the target "
                "at a BaseAgentWorker, a pydantic-ai or OpenAI Agents SDK Agent, a compiled "
                f"LangGraph graph, or a function that returns one. Fix it, {RELOAD_HINT}.",
                target=target,
            )
            return AgentEntry(name, target, source, error=error)
        return AgentEntry(name, target, source, agent=agent)

    def _load_tools(self, name: str, module_ref: str, source: str) -> ToolsEntry:
        what = f"tools module {name!r}"
        try:
            check_entry(name, module_ref, kind="tools")
            module = import_user_module(module_ref, self.project)
        except UserError as exc:
            return ToolsEntry(
                name, module_ref, source, error=UserCodeError(str(exc), target=module_ref)
            )
        except Exception as exc:
            error = _import_error(what, module_ref, exc, self.project)
            return ToolsEntry(name, module_ref, source, error=error)
        try:
            tools = tools_from_module(module)
        except TypeError as exc:
            message = f"{what} ({module_ref}): {exc}. Fix it, {RELOAD_HINT}."
            return ToolsEntry(
                name, module_ref, source, error=UserCodeError(message, target=module_ref)
            )
        if not tools:
            error = UserCodeError(
                f"{what} ({module_ref}) has no TOOLS list and no public functions: define the "
                f"functions your agent may call in it. Fix it, {RELOAD_HINT}.",
                target=module_ref,
            )
            return ToolsEntry(name, module_ref, source, error=error)
        return ToolsEntry(name, module_ref, source, tools=tuple(tools))


_default_lock = threading.Lock()
_default: UserCodeRegistry | None = None
_default_key: tuple[str, ...] | None = None


def default_registry() -> UserCodeRegistry:
    """The process's registry: the working folder's project files and the `stepwise` flags.

    It is made anew, forgetting the old one's modules and stopping its MCP servers, when the
    working folder or `$STEPWISE_AGENTS` / `_TOOLS` / `_MCP` change (tests do that; the app
    does not).
    """
    global _default, _default_key
    try:
        folder = os.getcwd()
    except OSError:  # The working folder was deleted: keep the registry we have.
        folder = _default_key[0] if _default_key else str(Path.home())
    key = (folder, *(os.environ.get(name, "") for name in (AGENTS_ENV, TOOLS_ENV, MCP_ENV)))
    with _default_lock:
        if _default is None or key != _default_key:
            if _default is not None:  # Another project: its modules must not shadow these.
                forget_user_modules()
                _default.close()
            _default = UserCodeRegistry.from_environment(project=folder)
            _default_key = key
        return _default


def reload() -> int:
    """Reload the process's registry (`UserCodeRegistry.reload`); its new generation."""
    return default_registry().reload()


def generation() -> int:
    """The process's registry generation: put it in the key of any cache of built runners."""
    return default_registry().generation
