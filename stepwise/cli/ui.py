"""`stepwise ui`: the Streamlit app, on this folder's agents and tools, from any folder.

The app ships in the package (`stepwise.app`), so `stepwise ui` works wherever Stepwise is
installed with its app extra (`pip install "stepwise[app]"`): in a user's own venv as in the
checkout. The app's settings ship beside it (`stepwise/app/config.toml`) and are passed as
flags, because Streamlit reads `.streamlit/config.toml` only from the working folder, which
here is the user's project.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from agent_core.extras import require
from agent_core.host import masked_target
from agent_core.user_code.registry import AGENTS_ENV, MCP_ENV, TOOLS_ENV
from stepwise.app import entry_script
from stepwise.app.config import streamlit_flags
from stepwise.http.settings import api_token, check_exposure

__all__ = [
    "DB_ENV",
    "RELOAD_ENV",
    "has_file_targets",
    "run_ui",
    "streamlit_command",
    "ui_environment",
]

DB_ENV = "STEPWISE_DB"
"""The app's database: a path or a URL (`stepwise.app.components.runtime.DB_ENV`)."""
RELOAD_ENV = "STEPWISE_RELOAD"
"""1 when the app watches the user's code and reloads it on a save
(`stepwise.app.components.code_watch.RELOAD_ENV`); unset when it does not."""


def has_file_targets(agents: Mapping[str, str], tools: Mapping[str, str]) -> bool:
    """Whether an `--agent` or `--tools` entry names a .py file (reload is on by default then).

    A module path (`package.module:attr`) is usually installed code the user is not editing.
    """
    refs = [target.rpartition(":")[0] for target in agents.values()] + list(tools.values())
    return any(ref.endswith(".py") for ref in refs)


def streamlit_command(*, port: int | None = None, host: str | None = None) -> list[str]:
    """The `streamlit run` command line of the installed app.

    `port` and `host` override the config's (8501 on localhost).

    `-P` keeps the working folder off the front of `sys.path`: the app's own packages
    (`stepwise`, ...) load from the installation even when the user's project has a
    package of the same name. The user's agents and tools still import from the project:
    the app's registry puts their folders on the path when it loads them.
    """
    script = str(entry_script())
    flags = streamlit_flags(port=port, host=host)
    return [sys.executable, "-P", "-m", "streamlit", "run", script, *flags]


def ui_environment(
    *,
    db: Path | str | None,
    agents: Mapping[str, str],
    tools: Mapping[str, str],
    mcp: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    reload: bool = False,
) -> dict[str, str]:
    """The app's environment: `environ` with the database and the command's entries set.

    Entries are passed as JSON objects in `$STEPWISE_AGENTS` / `$STEPWISE_TOOLS` /
    `$STEPWISE_MCP`, which the app's registry (`agent_core.user_code.registry`) reads; unset
    when there are none, so that the project file's entries are all there is. `reload` sets
    `$STEPWISE_RELOAD`.
    """
    env = dict(os.environ if environ is None else environ)
    env.pop(RELOAD_ENV, None)  # The command's flag decides, not a variable left set.
    if reload:
        env[RELOAD_ENV] = "1"
    if db is not None:
        env[DB_ENV] = str(db)
    for variable, entries in ((AGENTS_ENV, agents), (TOOLS_ENV, tools), (MCP_ENV, mcp or {})):
        if entries:
            env[variable] = json.dumps(dict(entries))
        else:
            env.pop(variable, None)
    return env


def run_ui(
    *,
    host: str | None = None,
    port: int | None,
    db: Path | str | None,
    agents: Mapping[str, str],
    tools: Mapping[str, str],
    mcp: Mapping[str, str] | None = None,
    reload: bool = False,
) -> int:
    """Start the app in this process's place (POSIX) or as a child; its exit status.

    The app starts the MCP servers (`mcp`, `{name: command or URL}`) when it first lists them,
    and with `reload` watches the user's code files, reloading them on a save.

    Raises:
        MissingExtraError: Streamlit (or another package of the app extra) is not installed.
        UserError: `host` is not a loopback address and no token (of 16+ characters) is set.
    """
    require("app", feature="stepwise ui")
    if host is not None:
        check_exposure(host, api_token())  # The app checks again; this fails before it starts.
    command = streamlit_command(port=port, host=host)
    env = ui_environment(db=db, agents=agents, tools=tools, mcp=mcp, reload=reload)
    where = masked_target(env.get(DB_ENV) or "stepwise.db")  # A URL's password is not logged.
    print(f"Stepwise: project folder {Path.cwd()}, database {where}", file=sys.stderr, flush=True)
    if os.name == "posix":
        # exec: Ctrl+C and a service manager's SIGTERM reach Streamlit itself.
        os.execve(sys.executable, command, env)
    return subprocess.call(command, env=env)
