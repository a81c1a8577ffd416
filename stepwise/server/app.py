"""The ASGI application: routes, the browser guard, the gate (token, body size), JSON errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

from fastapi import FastAPI, Request
from pydantic import BaseModel, Field

from stepwise.http.browser_guard import FOREIGN_HOST, BrowserGuard
from stepwise.http.errors import install_error_handlers
from stepwise.http.security import GateMiddleware, bearer_matches
from stepwise.server import agent_protocol, execute, extensions
from stepwise.server._invalid_text import InvalidTextGuard
from stepwise.server.runtime import ServerRuntime, runtime_of
from stepwise.server.settings import ServedProvider, ServerSettings

__all__ = ["Health", "ServerModel", "create_app", "create_app_from_env", "runtime_of"]

_DESCRIPTION = """\
Stepwise's runtime over HTTP.

- **Execute Agent** (`/v1/agent/execute`): one stateless agent inference step. Send the
  messages and tools; get a final answer or a request to run a tool. Nothing is stored.
- **Agent Protocol v1** (`/ap/v1/agent/...`): tasks and steps, one step per call, over the
  same store as the Stepwise app.
- **Stepwise extensions** (`/stepwise/v1/tasks/...`): undo, edit, approve or reject a tool
  call, feedback, run until, cancel, the step graph, and a live event stream.

Errors are JSON: `{"error": {"code", "message", "hint"}}` with a stable `code`.
"""


"""The one route that reads a multipart body (an artifact upload); every other reads JSON."""


class ServerModel(BaseModel):
    """The server's model; every task, agent and Execute Agent call naming none runs on it."""

    provider: ServedProvider
    name: str
    base_url: str | None = Field(
        description="host:port of the server the provider's SDK talks to; null: the provider's."
    )
    scripted: bool = Field(description="True for the scripted demo model: no model is called.")


class Health(BaseModel):
    """The server is up, and which model it runs."""

    status: Literal["ok"] = "ok"
    model: ServerModel | None = None
    """The model tasks run on; shown to token holders only when the server has a token."""


def create_app_from_env() -> FastAPI:
    """The app over the environment's settings (`stepwise serve --workers N`'s factory).

    uvicorn's worker processes take an import string, not an app object: each builds its own.
    """
    return create_app(ServerSettings())


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    """The server's ASGI app over `settings` (default: from the environment)."""
    settings = settings or ServerSettings()
    runtime = ServerRuntime(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        runtime.close()
        await asyncio.to_thread(_flush_spans)

    app = FastAPI(
        title="Stepwise",
        summary="A human-in-the-loop debugger for LLM agents, over HTTP",
        description=_DESCRIPTION,
        version="1",
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    # Innermost: it reads a body the gate below has bounded and authorised.
    app.add_middleware(InvalidTextGuard)
    app.add_middleware(
        GateMiddleware,
        token=settings.token,
        max_body_bytes=settings.max_body_bytes,
        route_limits=[agent_protocol.UPLOAD_LIMIT],  # One limit: an artifact's.
    )
    # Added last, so it runs first: a foreign page is refused before the token is checked.
    app.add_middleware(
        BrowserGuard,
        allowed_hosts=settings.allowed_hosts,
        multipart_paths=agent_protocol.UPLOAD_LIMIT.path,  # Uploads are multipart forms.
    )
    install_error_handlers(app)

    @app.get("/health", tags=["server"], summary="Whether the server is up (no token needed)")
    def health(request: Request) -> Health:
        # Open to load balancers, so a server with a token names its model (and the model
        # server's address) only to callers who hold the token; and never to a caller under a
        # host name not allowed (a rebinding page on a server with no token).
        header = request.headers.get("authorization", "").encode()
        if settings.token and not bearer_matches(header, settings.token.encode()):
            return Health()
        if request.scope.get(FOREIGN_HOST):
            return Health()
        return Health(model=ServerModel(**settings.default_model.describe()))

    app.include_router(execute.router)
    app.include_router(agent_protocol.router)
    app.include_router(extensions.router)
    return app


def _flush_spans() -> None:
    """Send the spans still queued for the collector, waiting SHUTDOWN_TIMEOUT_S at most.

    The exit hook that closes tracing never runs on SIGTERM: uvicorn re-raises the signal
    after shutdown and its default action ends the process, so the last steps' spans were
    lost. Flushed here, tracing stays on (an app made again in this process still traces).
    """
    from agent_core.telemetry import hooks
    from agent_core.telemetry.export import SHUTDOWN_TIMEOUT_S

    # None while tracing is off or undecided; a caller's own provider may not flush (the API's).
    provider = getattr(hooks.tracing, "provider", None)
    flush = getattr(provider, "force_flush", None)
    if flush is not None:
        flush(int(SHUTDOWN_TIMEOUT_S * 1000))
