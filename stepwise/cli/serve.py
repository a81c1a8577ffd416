"""`stepwise serve`: the HTTP server (FastAPI on uvicorn) over the app's store and agents."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from agent_core.extras import require
from stepwise.cli.ui import DB_ENV, ui_environment

__all__ = ["run_server"]

DEFAULT_PORT = 8000


def run_server(
    *,
    host: str,
    port: int | None,
    db: Path | None,
    agents: Mapping[str, str],
    tools: Mapping[str, str],
    mcp: Mapping[str, str] | None = None,
) -> int:
    """Serve until stopped (Ctrl+C, SIGTERM); the exit status.

    MCP servers (`mcp`, `{name: command or URL}`) start when a task first uses them.

    Raises:
        UserError: `host` is not a loopback address and no token is set.
        MissingExtraError: FastAPI or uvicorn is not installed (`stepwise[server]`).
    """
    require("server", feature="stepwise serve")
    import uvicorn

    from stepwise.http.listening import uvicorn_options
    from stepwise.http.settings import check_exposure
    from stepwise.server import ServerSettings, create_app

    settings = ServerSettings()
    check_exposure(host, settings.token)
    # The registry and the store read the same variables as the app's.
    os.environ.update(ui_environment(db=db, agents=agents, tools=tools, mcp=mcp))
    settings = ServerSettings()
    port = port or DEFAULT_PORT
    where = os.environ.get(DB_ENV, "stepwise.db")
    guarded = "a token is required" if settings.token else "no token"
    print(
        f"Stepwise: serving http://{host}:{port} ({guarded}), project folder {Path.cwd()}, "
        f"database {where}; {settings.default_model.summary()}; API docs at /docs",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        log_level="info",
        access_log=False,
        **uvicorn_options(),
    )
    return 0
