"""What a `stepwise serve` server runs with: its database, token, limits and default agent.

The token's variable and the exposure check are `stepwise.http.settings`', shared with the
services' control plane; they are re-exported here for the code that imported them from here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agent_core.errors import UserError
from agent_core.llms.catalog import PROVIDERS, split_model
from agent_core.spec import AgentSpec
from stepwise.http.settings import TOKEN_ENV, api_token, check_exposure, is_loopback

__all__ = [
    "DB_ENV",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "MODEL_ENV",
    "TOKEN_ENV",
    "ModelDefault",
    "ServedProvider",
    "ServerSettings",
    "check_exposure",
    "is_loopback",
]

MODEL_ENV = "STEPWISE_MODEL"
DB_ENV = "STEPWISE_DB"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000

ServedProvider = Literal["openai", "anthropic", "demo"]
"""The providers the server answers with: those of `agent_core.llms.catalog` that need no
person typing (a test holds the two equal); a Literal, so the OpenAPI schema lists them."""


def _default_model() -> ModelDefault:
    """`STEPWISE_MODEL` ("openai:gpt-4o-mini", "anthropic", "demo"), else the demo."""
    served = [name for name, entry in PROVIDERS.items() if not entry.needs_person]
    text = os.environ.get(MODEL_ENV, "demo")
    try:
        provider, name = split_model(text)
    except UserError:  # Said below, with the providers a server can run.
        provider, name = text, None
    if provider not in served:
        raise UserError(
            f"{MODEL_ENV}={text!r} names no provider the server runs: use {', '.join(served)}, "
            "optionally with :model-name"
        )
    return ModelDefault(provider=provider, name=name)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ModelDefault:
    """The model an Execute Agent request gets when it names none."""

    provider: ServedProvider
    name: str | None = None


@dataclass(frozen=True)
class ServerSettings:
    """The server's configuration; keys never live here (the SDKs read them from the env).

    Args:
        db: The SQLite file shared with the app (`STEPWISE_DB`, default ./stepwise.db).
        token: Every route but `/health` requires `Authorization: Bearer <token>` when set.
        default_agent: The agent a task gets when the request names none.
        default_model: The Execute Agent model when a request names none (`STEPWISE_MODEL`).
        max_body_bytes: Largest request body read.
        max_messages: Most messages one Execute Agent request may carry.
    """

    db: Path = field(default_factory=lambda: Path(os.environ.get(DB_ENV, "stepwise.db")))
    token: str | None = field(default_factory=api_token)
    default_agent: AgentSpec = field(default_factory=AgentSpec)
    default_model: ModelDefault = field(default_factory=_default_model)
    max_body_bytes: int = 1_000_000
    max_messages: int = 1_000
