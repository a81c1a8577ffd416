"""`stepwise serve`: the HTTP server (FastAPI on uvicorn) over the app's store and agents."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from agent_core.extras import require
from stepwise.cli.ui import ui_environment

__all__ = ["run_server"]

DEFAULT_PORT = 8000


def run_server(
    *,
    host: str,
    port: int | None,
    db: Path | str | None,
    agents: Mapping[str, str],
    tools: Mapping[str, str],
    mcp: Mapping[str, str] | None = None,
    workers: int = 1,
    max_tokens: int | None = None,
) -> int:
    """Serve until stopped (Ctrl+C, SIGTERM); the exit status.

    MCP servers (`mcp`, `{name: command or URL}`) start when a task first uses them. With
    `workers` > 1, uvicorn runs that many processes on the one port and database; each builds
    its app from the environment (`create_app_from_env`), where the settings are put first.
    `max_tokens` caps the served agent's replies (`STEPWISE_MAX_TOKENS`; None: as set there).

    Raises:
        UserError: `host` is not a loopback address and no token is set.
        MissingExtraError: FastAPI or uvicorn is not installed (`stepwise[server]`).
    """
    require("server", feature="stepwise serve")
    import uvicorn

    from agent_core.host import masked_target
    from stepwise.http.listening import uvicorn_options
    from stepwise.http.settings import check_exposure
    from stepwise.server import ServerSettings, create_app
    from stepwise.server.settings import MAX_TOKENS_ENV

    if max_tokens is not None:  # Through the environment, as the worker processes read it.
        os.environ[MAX_TOKENS_ENV] = str(max_tokens)
    settings = ServerSettings()
    check_exposure(host, settings.token)
    # The registry and the store read the same variables as the app's, and so do the workers.
    os.environ.update(ui_environment(db=db, agents=agents, tools=tools, mcp=mcp))
    settings = ServerSettings()
    port = port or DEFAULT_PORT
    guarded = "a token is required" if settings.token else "no token"
    processes = f", {workers} processes" if workers > 1 else ""
    print(
        f"Stepwise: serving http://{host}:{port} ({guarded}{processes}), project folder "
        f"{Path.cwd()}, database {masked_target(settings.db)}; "
        f"{settings.default_model.summary()}{_cap_text(settings.max_tokens)}; API docs at /docs",
        file=sys.stderr,
        flush=True,
    )
    options = {"host": host, "port": port, "log_level": "info", "access_log": False}
    if workers > 1:
        uvicorn.run(
            "stepwise.server.app:create_app_from_env",
            factory=True,
            workers=workers,
            **options,
            **uvicorn_options(),
        )
    else:
        uvicorn.run(create_app(settings), **options, **uvicorn_options())
    return 0


def _cap_text(max_tokens: int | None) -> str:
    """The reply cap, for the start line: said, since without one a reply may run long."""
    if max_tokens is None:
        return ", no reply cap (--max-tokens N sets one)"
    return f", replies up to {max_tokens:,} tokens"
