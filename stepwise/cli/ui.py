"""`stepwise ui`: the Streamlit app, on this folder's agents and tools, as `make run` starts it.

The app lives in the source tree beside this package (`app.py`), so `stepwise ui` works from
a source checkout or an editable install (`pip install -e .`). The options `make run` takes
from the repository's `.streamlit/config.toml` are passed as flags, because Streamlit reads
that file from the working folder, which here is the user's project.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path

from agent_core.errors import UserError
from agent_core.user_code.registry import AGENTS_ENV, TOOLS_ENV

__all__ = ["DB_ENV", "REPO", "app_path", "run_ui", "streamlit_command", "ui_environment"]

REPO = Path(__file__).resolve().parents[2]
"""The source tree holding `app.py`, `pages/` and `components/`."""
DB_ENV = "STEPWISE_DB"
"""The app's database path (`components.runtime.DB_ENV`)."""


def app_path() -> Path:
    """The app's entry script, or a `UserError` saying how to install Stepwise to have it."""
    app = REPO / "app.py"
    if not app.is_file():
        raise UserError(
            f"the Stepwise app is not beside the stepwise.cli package (no {app}): `stepwise ui` "
            "runs from a source checkout; install it there with `pip install -e .`"
        )
    return app


def _config_options() -> dict[str, str]:
    """The repository's `.streamlit/config.toml` as `{"section.option": "value"}`."""
    path = REPO / ".streamlit" / "config.toml"
    if not path.is_file():
        return {}
    options: dict[str, str] = {}
    for section, table in tomllib.loads(path.read_text(encoding="utf-8")).items():
        for option, value in table.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            options[f"{section}.{option}"] = text
    return options


def streamlit_command(*, port: int | None = None) -> list[str]:
    """The `streamlit run` command line of the app (`port`: else the config's, 8501)."""
    options = _config_options()
    if port is not None:
        options["server.port"] = str(port)
    flags = [part for name, value in options.items() for part in (f"--{name}", value)]
    return [sys.executable, "-m", "streamlit", "run", str(app_path()), *flags]


def ui_environment(
    *,
    db: Path | None,
    agents: Mapping[str, str],
    tools: Mapping[str, str],
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The app's environment: `environ` with the database and the command's entries set.

    Entries are passed as JSON objects in `$STEPWISE_AGENTS` / `$STEPWISE_TOOLS`, which the
    app's registry (`agent_core.user_code.registry`) reads; unset when there are none, so that the
    project file's entries are all there is.
    """
    env = dict(os.environ if environ is None else environ)
    if db is not None:
        env[DB_ENV] = str(db)
    for variable, entries in ((AGENTS_ENV, agents), (TOOLS_ENV, tools)):
        if entries:
            env[variable] = json.dumps(dict(entries))
        else:
            env.pop(variable, None)
    return env


def run_ui(
    *, port: int | None, db: Path | None, agents: Mapping[str, str], tools: Mapping[str, str]
) -> int:
    """Start the app in this process's place (POSIX) or as a child; its exit status."""
    from components.dag_view import ensure_static_assets

    command = streamlit_command(port=port)
    env = ui_environment(db=db, agents=agents, tools=tools)
    ensure_static_assets()  # As `make run` does: vis-network in the app's static folder.
    where = env.get(DB_ENV, "stepwise.db")
    print(f"Stepwise: project folder {Path.cwd()}, database {where}", file=sys.stderr, flush=True)
    if os.name == "posix":
        # exec: Ctrl+C and a service manager's SIGTERM reach Streamlit itself.
        os.execve(sys.executable, command, env)
    return subprocess.call(command, env=env)
