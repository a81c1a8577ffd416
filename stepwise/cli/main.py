"""The `stepwise` command line: argument parsing and dispatch to the subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from agent_core.errors import AgentCoreError, UserError
from agent_core.extras import require
from agent_core.host import is_url
from agent_core.telemetry import hooks as telemetry_hooks
from agent_core.user_code.registry import EntryKind, parse_entry
from stepwise.cli.cases import add_test_parser, run_test
from stepwise.cli.db import add_db_parser, run_db
from stepwise.cli.import_command import add_import_parser, run_import
from stepwise.cli.mcp_command import DEFAULT_PORT as MCP_PORT
from stepwise.cli.mcp_command import EPILOG as MCP_EPILOG
from stepwise.cli.mcp_command import add_mcp_arguments, run_mcp
from stepwise.cli.services_args import add_services_parser

__all__ = ["build_parser", "main"]

_DESCRIPTION = "Stepwise: a human-in-the-loop debugger for LLM agents."
_UI_EPILOG = """\
Your agents and tools:
  --agent NAME=TARGET   TARGET is path/to/file.py:attr or package.module:attr, where attr is
                        a BaseAgentWorker, or a function that returns one: it gets the model
                        chosen in the app (def build_agent(llm)) or nothing.
  --tools NAME=MODULE   MODULE is path/to/file.py or package.module: its TOOLS list, else its
                        public functions, become tools for the built-in workers.
  --mcp NAME=SERVER     SERVER is an MCP server's command line, run in this folder and spoken
                        to over stdio ("uvx mcp-server-time"), or the URL of its streamable-
                        HTTP endpoint (http://127.0.0.1:8000/mcp): its tools join the form's
                        Tools beside the built-in ones (needs the mcp extra).
  File paths are relative to this folder. Entries can also live in this folder's
  pyproject.toml, under [tool.stepwise]:
      agents = { my_agent = "my_agent.py:build_agent" }
      tools = { my_tools = "my_tools.py" }
      mcp = { time = "uvx mcp-server-time" }
  (or at the top level of stepwise.toml); --agent, --tools and --mcp win over them.

Examples:
  stepwise ui
  stepwise ui --agent my_agent=my_agent.py:build_agent --tools my_tools=my_tools.py
  stepwise ui --mcp time="uvx mcp-server-time --local-timezone UTC"
  stepwise ui --db runs.db --port 8502
  STEPWISE_API_TOKEN=... stepwise ui --host 0.0.0.0   (then open http://HOST:8501/?token=...)

The app answers only localhost, IP addresses and the names in STEPWISE_ALLOWED_HOSTS, and only
its own pages. The app needs Stepwise's app extra: pip install "stepwise[app]".
"""


def _entry(kind: EntryKind) -> Callable[[str], tuple[str, str]]:
    """An argparse `type` for `--agent` / `--tools` / `--mcp`: the checked `(name, target)`."""

    def parse(text: str) -> tuple[str, str]:
        try:
            return parse_entry(text, kind=kind)
        except UserError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = f"{kind} entry"  # argparse names the type in some messages.
    return parse


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return port


def _workers(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if not 1 <= count <= 64:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of processes (1-64)")
    return count


def _max_tokens(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of tokens (1 or more)")
    return count


def _db(text: str) -> Path | str:
    if is_url(text):  # A database server's URL (`open_store` says which schemes it reads).
        return text
    path = Path(text).expanduser().resolve()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; give the database file's path")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(
            f"the folder of {text!r} ({path.parent}) does not exist: create it first"
        )
    return path


_SERVE_EPILOG = """\
Security: the server listens on 127.0.0.1 unless --host says otherwise. With
STEPWISE_API_TOKEN set, every route but /health needs `Authorization: Bearer <token>`;
listening on any other address without a token is refused. Model keys come from this
process's environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...), never from a request.

Examples:
  stepwise serve
  stepwise serve --port 8000 --agent my_agent=my_agent.py:build_agent
  stepwise serve --mcp time="uvx mcp-server-time"
  STEPWISE_MODEL=openai:smollm2 stepwise serve --max-tokens 512
  STEPWISE_API_TOKEN=... stepwise serve --host 0.0.0.0
  stepwise serve --db postgresql://stepwise@db.internal/stepwise --workers 4

Then open http://127.0.0.1:8000/docs.
"""


def build_parser() -> argparse.ArgumentParser:
    """The `stepwise` argument parser: `ui`, `serve`, `mcp`, `services`, `db`, `test`, `import`."""
    parser = argparse.ArgumentParser(prog="stepwise", description=_DESCRIPTION)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    ui = commands.add_parser(
        "ui",
        help="start the app in the browser, on this folder's agents and tools",
        description="Start the Stepwise app (Streamlit) on http://localhost:8501, as `make run`\n"
        "does, with your own agents and tools from this folder.",
        epilog=_UI_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ui.add_argument(
        "--host",
        help="the address to listen on (default: localhost); any other than loopback needs"
        " STEPWISE_API_TOKEN, which each browser gives once as /?token=...",
    )
    ui.add_argument(
        "--reload",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="watch your agent and tools files and reload them on a save; the Stepper then "
        "offers Re-run from step N (default: on when --agent or --tools names a .py file)",
    )
    _add_shared_arguments(ui, default_port=8501)
    serve = commands.add_parser(
        "serve",
        help="serve the runtime over HTTP: Execute Agent API, Agent Protocol, extensions",
        description="Serve Stepwise over HTTP (FastAPI on uvicorn), on the same database and\n"
        "agents as the app: a task created over HTTP shows in the app, and the other way round.",
        epilog=_SERVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)"
    )
    _add_shared_arguments(serve, default_port=8000)
    serve.add_argument(
        "--workers",
        type=_workers,
        default=1,
        metavar="N",
        help="server processes on the one port and database (default: 1), each serving every "
        "route. The team setup is --db postgresql://... (processes or machines on one "
        "database; a step one runs streams live to a watcher on another); a SQLite file "
        "takes a few processes of one machine (a watcher sees the others' steps as stored)",
    )
    serve.add_argument(
        "--max-tokens",
        type=_max_tokens,
        metavar="N",
        help="the most tokens one reply of the served agent may have (default: "
        "$STEPWISE_MAX_TOKENS, else no cap): a small model on a local server may otherwise "
        "write until its context is full",
    )
    add_services_parser(commands)
    add_db_parser(commands)
    add_test_parser(commands)
    add_import_parser(commands)
    mcp = commands.add_parser(
        "mcp",
        help="the debugger as MCP tools for coding agents (stdio, or streamable HTTP)",
        description="Serve Stepwise's debugger as MCP tools (list, create, show, run, edit,\n"
        "approve, reject, undo, fork, compare, save and run tests, import) on the app's database.",
        epilog=MCP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_mcp_arguments(mcp)
    _add_shared_arguments(mcp, default_port=MCP_PORT)
    return parser


def _add_shared_arguments(command: argparse.ArgumentParser, *, default_port: int) -> None:
    command.add_argument(
        "--db",
        type=_db,
        metavar="PATH|URL",
        help="where the tasks are kept: a SQLite file, or a team's postgresql:// URL "
        "(default: $STEPWISE_DB, else ./stepwise.db)",
    )
    command.add_argument(
        "--port", type=_port, metavar="N", help=f"the port to serve on (default: {default_port})"
    )
    command.add_argument(
        "--agent",
        dest="agents",
        action="append",
        default=[],
        type=_entry("agent"),
        metavar="NAME=TARGET",
        help="your agent, e.g. my_agent=my_agent.py:build_agent (repeatable)",
    )
    command.add_argument(
        "--tools",
        dest="tools",
        action="append",
        default=[],
        type=_entry("tools"),
        metavar="NAME=MODULE",
        help="your tools module, e.g. my_tools=my_tools.py (repeatable)",
    )
    command.add_argument(
        "--mcp",
        dest="mcp",
        action="append",
        default=[],
        type=_entry("mcp"),
        metavar="NAME=SERVER",
        help='an MCP server whose tools join the form: a command, e.g. time="uvx '
        'mcp-server-time", or a URL, e.g. docs=http://127.0.0.1:8000/mcp (repeatable)',
    )
    command.set_defaults(command_parser=command)  # Its errors show its own usage line.


def _by_name(
    parser: argparse.ArgumentParser, entries: list[tuple[str, str]], flag: str
) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in entries:
        if name in found:
            parser.error(f"{flag} {name}=... is given twice: give each name once")
        found[name] = value
    return found


def _services(args: argparse.Namespace) -> int:
    try:
        require("services", feature="stepwise services")
        from stepwise.cli.services import run_services

        return run_services(args)
    except AgentCoreError as exc:
        print(f"stepwise services: {exc}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `stepwise` command; the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command == "services":
        return _services(args)
    if args.command == "db":
        return run_db(args)
    if args.command == "test":
        return run_test(args)
    if args.command == "import":
        return run_import(args)
    agents = _by_name(args.command_parser, args.agents, "--agent")
    tools = _by_name(args.command_parser, args.tools, "--tools")
    mcp = _by_name(args.command_parser, args.mcp, "--mcp")
    try:
        telemetry_hooks.check_endpoint_setting()  # Said at start, not by a step that hangs.
        if args.command == "mcp":
            return run_mcp(
                http=args.http,
                host=args.host,
                port=args.port,
                db=args.db,
                agents=agents,
                tools=tools,
                mcp=mcp,
            )
        if args.command == "serve":
            from stepwise.cli.serve import run_server

            return run_server(
                host=args.host,
                port=args.port,
                db=args.db,
                agents=agents,
                tools=tools,
                mcp=mcp,
                workers=args.workers,
                max_tokens=args.max_tokens,
            )
        from stepwise.cli.ui import has_file_targets, run_ui

        reload = args.reload if args.reload is not None else has_file_targets(agents, tools)
        return run_ui(
            host=args.host,
            port=args.port,
            db=args.db,
            agents=agents,
            tools=tools,
            mcp=mcp,
            reload=reload,
        )
    except AgentCoreError as exc:
        print(f"stepwise {args.command}: {exc}", file=sys.stderr)
        return 1
