"""The runner a replay drives: the case's agent, built from the current code, with stand-ins.

The agent is rebuilt from the case's spec (or an `--agent NAME=TARGET` override) through the
user-code registry, so the replay runs what the user's files say now. The model the spec
would build is replaced by the `RecordedLLM`: a factory `build_agent(llm)` gets it, and so do
the built-in workers; a worker of the user's that brought its own model has it swapped on a
copy. Tools that touch the outside (or all, or none: `ToolsMode`) are wrapped by
`RecordedTool`. A framework's agent (pydantic-ai, the Agents SDK, LangGraph) calls its own
model client: `CLIENT_LEVEL_REPLAY`, by framework name, holds what answers it at the model
client from the same `ReplayLog` (`client_replay`: the SDKs' `httpx` transport, or a
pydantic-ai `FunctionModel`); a framework missing there fails with `ReplayUnsupportedError`.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import PrivateAttr

from agent_core.adapters import FRAMEWORKS
from agent_core.llms.base import LLM
from agent_core.llms.catalog import split_model
from agent_core.recordings.cases import Case, ToolsMode
from agent_core.recordings.client_replay import ClientReplayWorker
from agent_core.recordings.errors import ReplayUnsupportedError
from agent_core.recordings.stand_ins import RecordedTool, ReplayLog
from agent_core.runtime.parallel import ParallelAgentRunner
from agent_core.spec import REGISTRY_CONTEXT, AgentSpec
from agent_core.store.base import Store
from agent_core.store.memory import InMemoryStore
from agent_core.tools.base import BaseTool
from agent_core.user_code.registry import UserCodeRegistry
from agent_core.workers.base import BaseAgentWorker

__all__ = ["CLIENT_LEVEL_REPLAY", "ReplayRunner", "build_replay_runner", "spec_of"]


def _through_client(worker: BaseAgentWorker, log: ReplayLog) -> BaseAgentWorker:
    """An Agents SDK or LangGraph worker: its SDK's model calls answered at `httpx`."""
    return ClientReplayWorker(worker, log)


def _pydantic_ai(worker: BaseAgentWorker, log: ReplayLog) -> BaseAgentWorker:
    """A pydantic-ai worker: at `httpx`, or by a `FunctionModel` for an in-process model."""
    from agent_core.recordings import _pydantic_ai_replay  # pydantic-ai only when it is used.

    agent = getattr(worker, "agent", None)
    if _pydantic_ai_replay.in_process_model(agent):
        return ClientReplayWorker(worker, log, _pydantic_ai_replay.model_swap(agent, log))
    return ClientReplayWorker(worker, log)


CLIENT_LEVEL_REPLAY: dict[str, Callable[[BaseAgentWorker, ReplayLog], BaseAgentWorker]] = {
    "pydantic-ai": _pydantic_ai,
    "openai-agents": _through_client,
    "langgraph": _through_client,
}
"""Framework name -> what makes its worker call the model through the recording."""

ReplayRunner = ParallelAgentRunner


class _SpecWithModel(AgentSpec):
    """The case's spec, building the model it is given instead of the provider's."""

    _llm: LLM | None = PrivateAttr(default=None)

    def build_llm(self, **options: Any) -> LLM:
        return self._llm if self._llm is not None else super().build_llm(**options)


def spec_of(
    case: Case,
    *,
    agent: tuple[str, str] | None,
    registry: UserCodeRegistry,
    workspace: str,
    model: str | None = None,
) -> AgentSpec:
    """The spec the case runs with now: its own, or the override `agent` (name, target).

    `model` ("provider:model") replaces the spec's provider and model; the case's base URL
    is dropped with them, as it named the recorded model's server, so the provider's
    environment (`OPENAI_BASE_URL`) or its own API applies.

    Raises:
        ReplayUnsupportedError: The case records no agent and none is given.
        pydantic.ValidationError: The spec is not valid (an unknown tool, a bad target).
    """
    data = dict(case.agent)
    if agent is not None and (not data.get("agent") or data.get("agent") == agent[0]):
        data.update(agent=agent[0], agent_target=agent[1])
    if not data:
        raise ReplayUnsupportedError(
            f"case {case.name!r} records no agent (its task ran on a runner built without a "
            "spec): give one with --agent NAME=TARGET (replay_case(..., agent=...))",
            params={"reason": "no agent recorded"},
        )
    data["workspace"] = workspace
    if model is not None:
        provider_name, model_name = split_model(model)
        data.update(provider=provider_name, model=model_name or "", base_url=None)
    return _SpecWithModel.model_validate(data, context={REGISTRY_CONTEXT: registry})


def build_replay_runner(
    case: Case,
    *,
    llm: LLM | None,
    log: ReplayLog | None,
    tools: ToolsMode,
    agent: tuple[str, str] | None = None,
    registry: UserCodeRegistry | None = None,
    store: Store | None = None,
    project: str | Path = ".",
    model: str | None = None,
) -> ParallelAgentRunner:
    """A runner of the case's agent; `llm` None runs a real model (live).

    Args:
        case: The case whose agent runs.
        llm: The recording's stand-in model, or None for a live run.
        log: The replay's log (None when live).
        tools: How tools are answered.
        agent: An override `(name, target)` of the case's agent.
        registry: The user-code registry (default: one on `project`).
        store: Where the task is kept (default: in memory).
        project: The user's project folder.
        model: With `llm` None: run this model ("provider:model") instead of the agent's own.

    Raises:
        ReplayUnsupportedError: No agent is recorded or given, or the agent calls its own
            model client (a framework's agent) in a replay from the recording or on `model`.
        UserCodeError: The agent or its tools failed to import.
        UserError: `model` names an unknown provider, or its model cannot be set up (no key).
    """
    if registry is None:
        agents = {agent[0]: agent[1]} if agent else {}
        registry = UserCodeRegistry(project=project, agents=agents)
    workspace = tempfile.mkdtemp(prefix=_WORKSPACE_PREFIX)
    try:
        spec = spec_of(case, agent=agent, registry=registry, workspace=workspace, model=model)
        if llm is None and model is not None:
            llm = spec.build_llm()  # Built once: the worker must get this one, not its own.
            log = None
        if llm is not None and isinstance(spec, _SpecWithModel):
            spec._llm = llm
        worker = spec.build_worker(registry=registry)
        if llm is not None and log is not None:
            worker = _with_stand_ins(worker, llm, log, tools=tools, case=case)
        elif llm is not None:
            worker = _on_model(worker, llm, case=case, model=model or "")
    except BaseException:
        shutil.rmtree(workspace, ignore_errors=True)
        raise
    return ParallelAgentRunner(
        worker,
        store=store if store is not None else InMemoryStore(),
        conversation_id=None,
        spec=spec.model_dump(mode="json"),
    )


def discard_workspace(runner: ParallelAgentRunner) -> None:
    """Delete the replay's own workspace folder (each replay made one: thousands piled up)."""
    folder = (runner.spec or {}).get("workspace") if isinstance(runner.spec, dict) else None
    if folder and Path(folder).name.startswith(_WORKSPACE_PREFIX):
        shutil.rmtree(folder, ignore_errors=True)


_WORKSPACE_PREFIX = "stepwise-replay-"


def _with_stand_ins(
    worker: BaseAgentWorker, llm: LLM, log: ReplayLog, *, tools: ToolsMode, case: Case
) -> BaseAgentWorker:
    framework = _framework(worker)
    if framework is not None:
        adapt = CLIENT_LEVEL_REPLAY.get(framework)
        if adapt is None:
            raise ReplayUnsupportedError(
                f"case {case.name!r}: its agent is a {framework} agent, which calls its own "
                "model client; replaying it from the recording is not supported yet. Run it "
                "with the real model (stepwise test --live), or build the agent in a factory "
                "that takes Stepwise's model (def build_agent(llm): ...) and calls it",
                params={"reason": f"{framework} calls its own model", "framework": framework},
            )
        return adapt(worker, log)
    worker = copy.copy(worker)  # The registry may share the instance: change a copy.
    own_llm = getattr(worker, "llm", None)
    if isinstance(own_llm, LLM) and own_llm is not llm:  # A worker that brought its own model.
        worker.llm = llm  # type: ignore[attr-defined]
    own_tools = getattr(worker, "tools", None)
    if isinstance(own_tools, Mapping):
        worker.tools = {  # type: ignore[attr-defined]
            name: _stand_in(tool, log, tools) for name, tool in own_tools.items()
        }
    return worker


def _on_model(worker: BaseAgentWorker, llm: LLM, *, case: Case, model: str) -> BaseAgentWorker:
    """`worker` on `llm` (a live run on another model), tools untouched.

    Raises:
        ReplayUnsupportedError: `worker` is a framework's agent: it builds its own model
            client, which Stepwise cannot swap.
    """
    framework = _framework(worker)
    if framework is not None:
        raise ReplayUnsupportedError(
            f"case {case.name!r}: its agent is a {framework} agent, which builds its own model "
            f"client; --model {model} cannot change it. Run it live on its own model (drop "
            "--model), or set the model in the agent's code",
            params={"reason": f"{framework} builds its own model", "framework": framework},
        )
    if getattr(worker, "llm", None) is llm:
        return worker
    worker = copy.copy(worker)  # The registry may share the instance: change a copy.
    if isinstance(getattr(worker, "llm", None), LLM):  # A worker that brought its own model.
        worker.llm = llm  # type: ignore[attr-defined]
    return worker


def _stand_in(tool: Any, log: ReplayLog, mode: ToolsMode) -> Any:
    if not isinstance(tool, BaseTool) or mode == "live":
        return tool
    if mode == "recorded" or tool.metadata.side_effects:
        return RecordedTool(tool, log)
    return tool


def _framework(worker: BaseAgentWorker) -> str | None:
    """The framework whose adapter `worker` is (by the module its class lives in), or None."""
    module = type(worker).__module__
    if not module.startswith("agent_core.adapters."):
        return None
    name = module.split(".")[2].lstrip("_")
    for framework in FRAMEWORKS:
        if name.startswith(framework.adapter.rpartition(".")[2]):
            return framework.name
    return name
