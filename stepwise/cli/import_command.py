"""`stepwise import FILE`: each trace in a file as a read-only task, its id printed.

The file may be OTLP JSON (the OpenTelemetry GenAI conventions or OpenInference; one object or
the Collector's JSON lines), a Langfuse trace, a LangSmith run tree, or a Stepwise trace; the
format is told from the content unless `--format` says. Nothing in the file is run, imported
or fetched. Exit status: 0 with one task id per line, 2 when the file cannot be imported
(nothing is stored then).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agent_core.errors import AgentCoreError, UserError
from agent_core.host import open_store
from agent_core.recordings.importers import IMPORT_FORMATS, import_file

__all__ = ["add_import_parser", "run_import"]

_EPILOG = """\
Formats (told from the content; --format to say):
  otlp           OTLP JSON: an OpenTelemetry Collector's file exporter output (JSON lines) or
                 an OTLP/HTTP JSON body, with the GenAI conventions or OpenInference
  openinference  OTLP JSON, reading only OpenInference spans (Phoenix, its instrumentors)
  langfuse       a trace as Langfuse's API returns it (GET /api/public/traces/ID)
  langsmith      a run tree as LangSmith's API returns it (with child_runs)
  stepwise       a Stepwise trace (Export in the app)

Examples:
  stepwise import traces.jsonl
  stepwise import langfuse-trace.json --db team.db
"""


def add_import_parser(commands: Any) -> None:
    """Add `stepwise import` to the command's subparsers."""
    command = commands.add_parser(
        "import",
        help="open runs recorded elsewhere (OpenTelemetry, Langfuse, LangSmith) as tasks",
        description="Store each trace in FILE as a read-only task and print its id; fork any "
        "step with your agent to go on live.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument("file", metavar="FILE", help="the trace file")
    command.add_argument(
        "--db",
        metavar="PATH|URL",
        help="where to store the tasks: a SQLite file or a postgresql:// URL "
        "(default: $STEPWISE_DB, else ./stepwise.db)",
    )
    command.add_argument(
        "--format",
        choices=IMPORT_FORMATS,
        default="auto",
        help="the file's format (default: auto, from its content)",
    )


def run_import(args: argparse.Namespace) -> int:
    """Import the file; print each new task id on its own line. The exit status."""
    try:
        store = open_store(args.db)
    except AgentCoreError as exc:
        print(f"stepwise import: {exc}", file=sys.stderr)
        return 1
    try:
        task_ids = import_file(args.file, store, format=args.format)
    except UserError as exc:
        print(f"stepwise import: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    for task_id in task_ids:
        print(task_id)
    return 0
