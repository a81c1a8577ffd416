"""`stepwise mcp`: the debugger as an MCP server for coding agents (stdio, or streamable HTTP).

Over stdio (the default) a coding agent starts it as a subprocess and speaks MCP on its
stdin and stdout, so nothing else may be written to stdout: what this command says goes to
stderr. `--http` serves the streamable-HTTP endpoint at /mcp behind the same guard as `stepwise
serve`: loopback unless a token is set, foreign Host names and other pages refused.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agent_core.extras import require

if TYPE_CHECKING:  # The parser is built on every `stepwise` command: the rest loads when run.
    from agent_core.spec import AgentSpec

__all__ = ["DEFAULT_PORT", "EPILOG", "MODEL_ENV", "add_mcp_arguments", "default_spec", "run_mcp"]

DEFAULT_PORT = 8765
MODEL_ENV = "STEPWISE_MODEL"

EPILOG = """\
A coding agent's MCP configuration (stdio):
  {"mcpServers": {"stepwise": {"command": "stepwise", "args": ["mcp", "--db", "stepwise.db"]}}}

Examples:
  stepwise mcp
  stepwise mcp --agent my_agent=my_agent.py:build_agent
  stepwise mcp --http --port 8765            (then http://127.0.0.1:8765/mcp)
  STEPWISE_API_TOKEN=... stepwise mcp --http --host 0.0.0.0

Tasks run on $STEPWISE_MODEL ("openai:gpt-4o-mini", default: the scripted demo model); keys
come from this process's environment. The guide for coding agents: stepwise/mcp/AGENTS.md.
"""


def add_mcp_arguments(command: argparse.ArgumentParser) -> None:
    """The options of `stepwise mcp` besides the shared ones (`--db`, `--agent`, ...)."""
    command.add_argument(
        "--http",
        action="store_true",
        help="serve streamable HTTP at /mcp instead of stdio",
    )
    command.add_argument(
        "--host",
        default="127.0.0.1",
        help="with --http: the address to listen on (default: 127.0.0.1); any other than "
        "loopback needs STEPWISE_API_TOKEN",
    )


def default_spec() -> AgentSpec:
    """The built-in agent on `$STEPWISE_MODEL`, else on the scripted demo model.

    Raises:
        UserError: The variable names no provider.
    """
    from agent_core.llms.catalog import split_model
    from agent_core.spec import AgentSpec

    provider, name = split_model(os.environ.get(MODEL_ENV) or "demo")
    return AgentSpec(provider=provider, model=name or "")  # type: ignore[arg-type]


def run_mcp(
    *,
    http: bool,
    host: str,
    port: int | None,
    db: Path | str | None,
    agents: Mapping[str, str],
    tools: Mapping[str, str],
    mcp: Mapping[str, str] | None = None,
) -> int:
    """Serve the debugger's MCP tools until the client goes (stdio) or until stopped (HTTP).

    Raises:
        UserError: `host` is not a loopback address and no token is set.
        MissingExtraError: The `mcp` SDK (or, for HTTP, uvicorn) is not installed.
    """
    require("mcp", feature="stepwise mcp")
    from agent_core.host import Host, masked_target
    from stepwise.cli.ui import ui_environment
    from stepwise.http.settings import allowed_hosts, api_token, check_exposure
    from stepwise.mcp import DebuggerTools, build_server, http_app

    token = api_token()
    if http:
        check_exposure(host, token)  # Before anything is opened.
    # The user-code registry reads the command's entries from the environment, as the app's.
    os.environ.update(ui_environment(db=db, agents=agents, tools=tools, mcp=mcp))
    target = os.environ.get("STEPWISE_DB") or "stepwise.db"
    served = Host(target, default_spec=default_spec())
    try:
        server = build_server(DebuggerTools(served, project=Path.cwd()))
        where = f"http://{host}:{port or DEFAULT_PORT}/mcp" if http else "stdio"
        print(
            f"Stepwise MCP: serving {where}, project folder {Path.cwd()}, database "
            f"{masked_target(target)}",
            file=sys.stderr,
            flush=True,
        )
        if not http:
            server.run("stdio")
            return 0
        require("server", feature="stepwise mcp --http")
        import uvicorn

        from stepwise.http.listening import uvicorn_options

        app = http_app(server, token=token, allowed_hosts=allowed_hosts())
        options = {"host": host, "port": port or DEFAULT_PORT, "log_level": "warning"}
        uvicorn.run(app, **options, access_log=False, **uvicorn_options())
        return 0
    finally:
        served.close()
