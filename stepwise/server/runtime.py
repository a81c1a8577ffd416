"""What the server shares between requests: one store and one runner per agent spec.

The store is the app's own (a SQLite file, or a team's PostgreSQL database: `open_store`), so
a task created over HTTP shows in the app and the other way round. Nothing a route answers
from lives only in this process: several server processes on one database serve every route
(a runner's cached task is checked against the stored version before each use, and reloaded
when another process moved it on). A task is run by the runner of the spec it recorded; keys
come from the server's environment (the SDKs read `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
...), never from a request.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, Request
from pydantic import BaseModel, Field

from agent_core import ParallelAgentRunner, user_code
from agent_core.errors import UserError
from agent_core.llms.base import LLM
from agent_core.llms.catalog import PROVIDERS, infer_model
from agent_core.runtime.claims import claim_is_stale
from agent_core.runtime.step_runs import LIVE_RUNS
from agent_core.spec import AgentSpec
from agent_core.store.base import Store, TaskChange
from agent_core.store.open import open_store
from agent_core.types import StepStatus, Task, TaskState, TaskStatus
from stepwise.server._events import EventHub
from stepwise.server.settings import ServedProvider, ServerSettings

if TYPE_CHECKING:
    from stepwise.server._notify import NotifyBridge

__all__ = ["ModelUsed", "Runtime", "ServerRuntime", "runtime_of"]

_RUNNABLE = (TaskStatus.ACTIVE, TaskStatus.FAILED)
_MODELS_KEPT = 16  # Execute Agent's models: a request names any model, so only the latest stay.


class ModelUsed(BaseModel):
    """The model that answered."""

    provider: ServedProvider
    name: str
    scripted: bool = Field(description="True for the scripted demo model: not a real model.")


class _ToldStore:
    """The server's store: each commit of this process is told to the event subscribers.

    A wrapper, not a subclass, so it fits either store `open_store` returns; every other
    attribute is the wrapped store's.
    """

    def __init__(self, store: Store, on_commit: Callable[[TaskState], None]) -> None:
        self.wrapped = store
        self._on_commit = on_commit

    def commit(self, change: TaskChange) -> None:
        self.wrapped.commit(change)
        self._on_commit(change.state)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


class ServerRuntime:
    """The store and runners behind every route of one server."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self._bridge: NotifyBridge | None = None
        self.store = _ToldStore(open_store(settings.db), self._committed)
        self._runners: dict[tuple[str, int], ParallelAgentRunner] = {}
        self._models: OrderedDict[tuple[str, str], LLM] = OrderedDict()
        # Validating a spec consults the user's code registry: done once per recorded spec.
        self._specs: dict[str, AgentSpec] = {}
        self._reading_spec = AgentSpec()
        # The agent of every task that names none, on the server's model (`STEPWISE_MODEL`).
        self.default_spec = settings.agent_spec()
        self._guard = threading.Lock()
        # Live events for every subscriber of this process, from one feed per watched task.
        self.events = EventHub(
            load=lambda task_id: self.reader().get_task_state(task_id),
            version_of=self.store.task_version,
        )
        # On PostgreSQL the other server processes hear this one's commits and runs at once.
        self._bridge = _bridge(self.store.wrapped, self.events)

    def _committed(self, state: TaskState) -> None:
        # The state as committed: the event feed tells its changes without reading it back.
        self.events.changed(state.task_id, state)
        if self._bridge is not None:
            self._bridge.committed(state.task_id)

    def runner_for(self, spec: AgentSpec) -> ParallelAgentRunner:
        """The runner of `spec`, built once (again after the user's code is reloaded)."""
        generation = user_code.generation() if spec.uses_user_code else 0
        key = (spec.model_dump_json(), generation)
        with self._guard:
            runner = self._runners.get(key)
            if runner is None:
                runner = spec.build_runner(store=self.store, registry=user_code.default_registry())
                self._runners[key] = runner
            return runner

    def execute_model(self, provider: str, name: str | None) -> tuple[LLM, ModelUsed]:
        """The model for an Execute Agent call, built once per provider and name.

        Raises:
            MissingKeyError: The provider has no key in the server's environment.
        """
        entry = PROVIDERS[provider]
        name = name or entry.model_label
        with self._guard:
            llm = self._models.get((provider, name))
            if llm is None:
                llm = infer_model(entry.model_ref(name))  # Keys, base URLs: from the environment.
                self._models[(provider, name)] = llm
                if len(self._models) > _MODELS_KEPT:
                    self._models.popitem(last=False)
            self._models.move_to_end((provider, name))
        used = ModelUsed(provider=provider, name=name, scripted=entry.scripted)  # type: ignore[arg-type]
        return llm, used

    def reader(self) -> ParallelAgentRunner:
        """A runner that reads any task (the default demo spec: it needs no key)."""
        return self.runner_for(self._reading_spec)

    def spec_named(self, agent: str | None) -> AgentSpec:
        """The spec for a request naming `agent` (a registered agent), else the default.

        Both run on the server's model.

        Raises:
            UserError: No agent of that name is registered.
        """
        if not agent:
            return self.default_spec
        # A registered agent gets the server's model too: `build_agent(llm)` receives it.
        fields = {**self.default_spec.model_dump(), "agent": agent}
        fields.pop("agent_target")  # Filled in from the registry.
        try:
            return AgentSpec.from_registry(user_code.default_registry(), **fields)
        except ValueError as exc:
            names = user_code.default_registry().names("agent")  # A hint imports no agent.
            raise UserError(
                f"no agent named {agent!r} is registered on this server",
                hint=f"registered agents: {', '.join(sorted(names)) or 'none'}; start the server"
                " with --agent NAME=TARGET",
            ) from exc

    def runner_for_task(self, task_id: str) -> ParallelAgentRunner:
        """The runner of the spec `task_id` recorded; the reader once it can no longer run.

        A finished, abandoned or imported task is read only: its agent is never rebuilt.
        """
        task = self._current_task(task_id)
        if task.status not in _RUNNABLE or task.imported or not task.spec:
            return self.reader()
        return self.runner_for(self._spec_of(task.spec))

    def cancel_step(self, task_id: str, step_id: str, *, wait: float = 10.0) -> ParallelAgentRunner:
        """Stop a running step, in this process or, on PostgreSQL, in the one running it.

        Returns the task's runner, to answer with the task as it is after the stop.

        Raises:
            UserError: The step is not running (or runs elsewhere and the store is SQLite).
        """
        runner = self.runner_for_task(task_id)
        step = runner.get_step(task_id, step_id)
        if (
            self._bridge is None
            or LIVE_RUNS.get(step_id) is not None
            or step.status is not StepStatus.RUNNING
            or claim_is_stale(step.claimed_by, step_id)  # Its process is gone: nobody to tell.
        ):
            runner.cancel_step(task_id, step_id, wait=wait)
            return runner
        self._bridge.stop(task_id, step_id)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if self.reader().get_step(task_id, step_id).status is not StepStatus.RUNNING:
                break
        return self.runner_for_task(task_id)

    def _current_task(self, task_id: str) -> Task:
        """The task, from a runner that holds it at the stored version, else loaded.

        The runner that ran the last step holds it: the reader would load every step again.
        """
        version = self.store.task_version(task_id)
        with self._guard:
            runners = list(self._runners.values())
        for runner in runners:
            held = runner.state.task_dict.get(task_id)
            if held is not None and version is not None and held.version == version:
                return held.task
        return self.reader().get_task(task_id)

    def _spec_of(self, recorded: dict) -> AgentSpec:
        key = json.dumps(recorded, sort_keys=True)
        spec = self._specs.get(key)
        if spec is None:
            spec = self._specs[key] = AgentSpec.model_validate(recorded)
        return spec

    def close(self) -> None:
        """Close the store."""
        if self._bridge is not None:
            self._bridge.close()
        self.events.close()
        self.store.close()


def _bridge(store: Store, hub: EventHub) -> NotifyBridge | None:
    """The NOTIFY bridge of a PostgreSQL store; None for SQLite (the feeds poll the file)."""
    url, schema = getattr(store, "url", None), getattr(store, "schema", None)
    if not (isinstance(url, str) and isinstance(schema, str)):
        return None
    from stepwise.server._notify import NotifyBridge

    return NotifyBridge(url, schema, hub)


def runtime_of(request: Request) -> ServerRuntime:
    """The server's runtime, for routes (`Depends(runtime_of)`)."""
    return request.app.state.runtime


Runtime = Annotated[ServerRuntime, Depends(runtime_of)]
"""A route parameter typed `Runtime` receives the server's runtime."""
