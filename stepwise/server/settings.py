"""What a `stepwise serve` server runs with: its database, token, limits and default agent.

The token's variable, the allowed host names and the exposure check are
`stepwise.http.settings`', shared with the services' control plane; some are re-exported here
for the code that imported them from here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from agent_core.errors import UserError
from agent_core.host import is_url
from agent_core.llms.catalog import PROVIDERS, split_model
from agent_core.spec import AgentSpec
from stepwise.http.settings import (
    TOKEN_ENV,
    allowed_hosts,
    api_token,
    check_exposure,
    is_loopback,
)

__all__ = [
    "DB_ENV",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "MAX_TOKENS_ENV",
    "MODEL_ENV",
    "TOKEN_ENV",
    "ModelDefault",
    "ServedProvider",
    "ServerSettings",
    "check_exposure",
    "host_port",
    "is_loopback",
]

MODEL_ENV = "STEPWISE_MODEL"
MAX_TOKENS_ENV = "STEPWISE_MAX_TOKENS"
"""The served agent's reply cap (`stepwise serve --max-tokens`); unset: no cap is sent."""
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
    entry = PROVIDERS[provider]
    # Shown, never sent from here: the SDK reads the same variable when it builds the client.
    url = os.environ.get(entry.base_url_env) if entry.base_url_env else None
    server = host_port(entry.presets.get(url, url)) if url else None
    return ModelDefault(provider=provider, name=name, server=server)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ModelDefault:
    """The server's model: what a task, agent or Execute Agent request naming none gets.

    Attributes:
        provider: A provider of `agent_core.llms.catalog` that needs no person.
        name: The model's name; None: the provider's default.
        server: `host:port` of the server the provider's SDK talks to (its `base_url_env`),
            never the URL's path, user or password; None: the provider's own. For display
            only: the SDK reads the variable itself, so the environment's key goes with it.
    """

    provider: ServedProvider
    name: str | None = None
    server: str | None = None

    @property
    def scripted(self) -> bool:
        """Whether it is the scripted demo model (no model, no network)."""
        return PROVIDERS[self.provider].scripted

    @property
    def label(self) -> str:
        """The model's name as shown: the one given, else the provider's ("demo (scripted)")."""
        return self.name or PROVIDERS[self.provider].model_label

    def agent_fields(self) -> dict[str, Any]:
        """The `AgentSpec` fields that put an agent on this model."""
        return {"provider": self.provider, "model": self.name or ""}

    def describe(self) -> dict[str, Any]:
        """What `GET /health` says of the model: provider, name, server, scripted; no key."""
        return {
            "provider": self.provider,
            "name": self.label,
            "base_url": self.server,
            "scripted": self.scripted,
        }

    def summary(self) -> str:
        """For people: "model openai:smollm2 at 127.0.0.1:8080", or that it is the demo."""
        if self.scripted:
            return f"the scripted demo model: no model is called (set {MODEL_ENV} for a real one)"
        entry = PROVIDERS[self.provider]
        where = f"at {self.server}" if self.server else f"on {entry.label}'s own servers"
        return f"model {entry.model_ref(self.name)} {where}"


def _max_tokens_from_env() -> int | None:
    """`STEPWISE_MAX_TOKENS`: the most tokens one reply of the served agent may have."""
    text = os.environ.get(MAX_TOKENS_ENV, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise UserError(
            f"{MAX_TOKENS_ENV}={text!r} is not a reply cap: give a whole number of tokens, "
            "e.g. 512, or unset it for none",
            code="max_tokens_invalid",
            params={"where": MAX_TOKENS_ENV, "value": text},
        )
    return value


def _db_from_env() -> Path | str:
    """`STEPWISE_DB`: a database URL as given, else a SQLite file's path (./stepwise.db)."""
    target = os.environ.get(DB_ENV) or "stepwise.db"
    return target if is_url(target) else Path(target)


def host_port(url: str) -> str:
    """`host:port` of `url`; the scheme's port when it names none."""
    try:
        parts = urlsplit(url if "//" in url else f"//{url}")
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:  # A port that is not a number: show no part of the text.
        return "an unreadable URL"
    host = parts.hostname or "?"
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{port}" if port else host


@dataclass(frozen=True)
class ServerSettings:
    """The server's configuration; keys never live here (the SDKs read them from the env).

    Args:
        db: The store shared with the app (`STEPWISE_DB`): a SQLite file's path (default
            ./stepwise.db), or a `postgresql://` URL, for several server processes or machines
            on one database (`open_store`).
        token: Every route but `/health` requires `Authorization: Bearer <token>` when set.
        allowed_hosts: Host names answered besides loopback names and IP addresses
            (`STEPWISE_ALLOWED_HOSTS`); any other name is refused (DNS rebinding).
        default_agent: The agent a task gets when the request names none; None (the
            default): the built-in agent on `default_model`.
        default_model: The server's model (`STEPWISE_MODEL`, default: the demo): the model
            of every task, registered agent and Execute Agent request that names none.
        max_tokens: The reply cap of the agent a task naming none gets
            (`STEPWISE_MAX_TOKENS`, `stepwise serve --max-tokens`); None: none is sent.
        max_body_bytes: Largest request body read.
        max_messages: Most messages one Execute Agent request may carry.
    """

    db: Path | str = field(default_factory=_db_from_env)
    token: str | None = field(default_factory=api_token)
    allowed_hosts: frozenset[str] = field(default_factory=allowed_hosts)
    default_agent: AgentSpec | None = None
    default_model: ModelDefault = field(default_factory=_default_model)
    max_tokens: int | None = field(default_factory=_max_tokens_from_env)
    max_body_bytes: int = 1_000_000
    max_messages: int = 1_000

    def agent_spec(self) -> AgentSpec:
        """The agent of a task naming none: `default_agent`, else the built-in one on the model.

        Either gets `max_tokens` when it caps no reply itself: a small model on a local
        server may otherwise write until its context is full (the hint of `model_busy`).
        """
        spec = self.default_agent or AgentSpec(**self.default_model.agent_fields())
        if self.max_tokens is None or spec.max_tokens is not None:
            return spec
        return spec.model_copy(update={"max_tokens": self.max_tokens})
