"""What the server shares between requests: a `Host` (agent_core.host), and Execute Agent's models.

The host is over the app's own database, so a task created over HTTP shows in the app and
the other way round, and several server processes on one database serve every route. Keys
come from the server's environment (the SDKs read `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
...), never from a request.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Annotated

from fastapi import Depends, Request
from pydantic import BaseModel, Field

from agent_core.host import Host
from agent_core.llms.base import LLM
from agent_core.llms.catalog import PROVIDERS, infer_model
from stepwise.server.settings import ServedProvider, ServerSettings

__all__ = ["ModelUsed", "Runtime", "ServerRuntime", "runtime_of"]

_MODELS_KEPT = 16  # Execute Agent's models: a request names any model, so only the latest stay.


class ModelUsed(BaseModel):
    """The model that answered."""

    provider: ServedProvider
    name: str
    scripted: bool = Field(description="True for the scripted demo model: not a real model.")


class ServerRuntime:
    """What every route of one server shares: its settings, its `Host`, Execute Agent's models.

    The host's names (`store`, `events`, `runner_for`, `reader`, `spec_named`,
    `runner_for_task`, `cancel_step`, `default_spec`) are the routes' too.
    """

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        # The agent of every task that names none, on the server's model (`STEPWISE_MODEL`).
        self.host = Host(settings.db, default_spec=settings.agent_spec())
        self._models: OrderedDict[tuple[str, str], LLM] = OrderedDict()
        self._guard = threading.Lock()
        host = self.host
        self.store, self.events, self.default_spec = host.store, host.events, host.default_spec
        self.runner_for, self.reader, self.spec_named = (
            host.runner_for,
            host.reader,
            host.spec_named,
        )
        self.runner_for_task, self.cancel_step = host.runner_for_task, host.cancel_step

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

    def close(self) -> None:
        """Close the host (its live events and store)."""
        self.host.close()


def runtime_of(request: Request) -> ServerRuntime:
    """The server's runtime, for routes (`Depends(runtime_of)`)."""
    return request.app.state.runtime


Runtime = Annotated[ServerRuntime, Depends(runtime_of)]
"""A route parameter typed `Runtime` receives the server's runtime."""
