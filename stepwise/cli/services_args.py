"""The `stepwise services` arguments, apart from the code that runs them.

`stepwise` builds every subcommand's parser on each start; this module needs only argparse,
so `stepwise ui`, `stepwise serve` and `--help` do not load Redis and the services package.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_URL", "add_services_parser"]

DEFAULT_URL = "http://127.0.0.1:8100"
_UP_EPILOG = """\
Example (Redis Streams; each part its own process):
  stepwise services up examples/services.toml
  stepwise services status --url http://127.0.0.1:8100

The file names the queue (`queue = "redis://127.0.0.1:6379/0"`, or "simple" for one
process), the control plane (host, port, db: a SQLite file, or a postgresql:// URL that
several control planes share), the orchestrator (kind "agent" with model
"demo" or "openai:gpt-4o-mini", or kind "pipeline" with services in order) and each service
([[services]]: name, agent = "file.py:attr", description, replicas; kind "human" or "tool").
See examples/services.toml. A part that dies is started again (with backoff; `up` gives up
after 5 exits within 10 s of starting). STEPWISE_API_TOKEN, when set, guards the control
plane and signs every message on Redis.
"""


def add_services_parser(commands: Any) -> None:
    """Add `services up` and `services status` to the `stepwise` subcommands."""
    services = commands.add_parser(
        "services",
        help="multi-agent services on Redis Streams: start them (up) or see their state (status)",
        description="Multi-agent services (stepwise.services): start them from a TOML file, or\n"
        "print what a control plane holds.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = services.add_subparsers(dest="services_command", metavar="ACTION", required=True)
    up = actions.add_parser(
        "up",
        help="start the control plane and every service of CONFIG, each in its own process",
        description="Start the control plane and each service of CONFIG (a TOML file), restart\n"
        "one that dies, until Ctrl-C or SIGTERM stops them all.",
        epilog=_UP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    up.add_argument("config", type=Path, metavar="CONFIG", help="the services file (TOML)")
    status = actions.add_parser(
        "status",
        help="print services, tasks, hops to approve and the human inbox",
        description="Print a control plane's services, tasks, pending hops and human requests.",
    )
    status.add_argument(
        "--url", default=DEFAULT_URL, help=f"the control plane's URL (default: {DEFAULT_URL})"
    )
