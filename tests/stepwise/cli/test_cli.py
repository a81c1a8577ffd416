"""The `stepwise` command: its arguments, the app's command line and environment.

No test here starts a server (tests/e2e does); one runs the installed command for its help.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_core.user_code.registry import AGENTS_ENV, TOOLS_ENV, UserCodeRegistry
from stepwise.cli import ui
from stepwise.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[3]


def parse(*argv: str):
    return build_parser().parse_args(["ui", *argv])


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exited:
        main(["ui", *argv])
    assert exited.value.code == 2
    return capsys.readouterr().err


def test_ui_arguments_are_parsed_and_paths_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = parse(
        "--db", "runs.db", "--port", "8600",
        "--agent", "mine=agents/my_agent.py:build_agent",
        "--agent", "pkg=acme.bots:make",
        "--tools", "my_tools=my_tools.py",
    )  # fmt: skip
    assert args.db == tmp_path / "runs.db"
    assert args.port == 8600
    assert args.agents == [
        ("mine", f"{tmp_path / 'agents' / 'my_agent.py'}:build_agent"),
        ("pkg", "acme.bots:make"),
    ]
    assert args.tools == [("my_tools", str(tmp_path / "my_tools.py"))]
    defaults = parse()
    assert (defaults.db, defaults.port, defaults.agents, defaults.tools) == (None, None, [], [])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--agent", "mine"], "expected NAME=TARGET, e.g. --agent my_agent=my_agent.py"),
        (["--agent", "mine=my_agent.py"], "must be path/to/file.py:attr or package.module:attr"),
        (["--agent", "=x.py:f"], "expected NAME=TARGET"),
        (["--agent", "a b=x.py:f"], "'a b' is not allowed"),
        (["--tools", "my_tools"], "expected NAME=MODULE"),
        (["--tools", "files=my_files.py"], "built-in tool's name"),
        (["--tools", "t=my_tools.py:fn"], "neither a .py file nor a dotted module"),
        (["--port", "http"], "'http' is not a port number"),
        (["--port", "70000"], "not a port number"),
        (["--db", "no/such/folder/x.db"], "does not exist: create it first"),
        (["--agent", "a=x.py:f", "--agent", "a=y.py:g"], "--agent a=... is given twice"),
    ],
)
def test_bad_arguments_are_refused_before_anything_starts(capsys, argv, message):
    err = refused(capsys, *argv)
    assert message in err
    assert "usage: stepwise ui" in err


def test_a_folder_is_not_a_database(capsys, tmp_path):
    assert "is a folder" in refused(capsys, "--db", str(tmp_path))


def test_the_installed_app_runs_with_the_settings_that_ship_beside_it():
    command = ui.streamlit_command(port=8765)
    entry = ROOT / "stepwise" / "app" / "_entry" / "stepwise_app.py"
    # -P: the user's folder does not go first on sys.path, where it would shadow the app's own.
    assert command[:6] == [sys.executable, "-P", "-m", "streamlit", "run", str(entry)]
    assert entry.is_file()
    flags = dict(zip(command[6::2], command[7::2], strict=True))
    # stepwise/app/config.toml, as Streamlit would not find .streamlit/ from the user's folder.
    assert flags["--server.address"] == "localhost"
    assert flags["--server.headless"] == "true"
    assert flags["--browser.gatherUsageStats"] == "false"
    assert flags["--runner.magicEnabled"] == "false"
    assert flags["--server.port"] == "8765" and command.count("--server.port") == 1
    default = ui.streamlit_command()
    assert dict(zip(default[6::2], default[7::2], strict=True))["--server.port"] == "8501"


def test_the_shipped_settings_are_the_checkouts_make_run_settings():
    import tomllib

    from stepwise.app.config import streamlit_options

    make_run = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    shipped = tomllib.loads((ROOT / "stepwise" / "app" / "config.toml").read_text())
    assert shipped == make_run
    assert streamlit_options()["server.headless"] == "true"
    assert len(streamlit_options()) == sum(len(table) for table in shipped.values())


def test_the_environment_carries_the_database_and_the_entries_to_the_registry(tmp_path):
    from stepwise.app.components.runtime import DB_ENV

    inherited = {"PATH": "/bin", AGENTS_ENV: '{"stale": "old.py:f"}', TOOLS_ENV: "{}"}
    env = ui.ui_environment(
        db=tmp_path / "x.db",
        agents={"mine": str(tmp_path / "a.py") + ":build"},
        tools={},
        environ=inherited,
    )
    assert ui.DB_ENV == DB_ENV and env[DB_ENV] == str(tmp_path / "x.db")
    assert env["PATH"] == "/bin"
    assert json.loads(env[AGENTS_ENV]) == {"mine": f"{tmp_path / 'a.py'}:build"}
    assert TOOLS_ENV not in env  # no --tools: the project file's entries are all there are
    registry = UserCodeRegistry.from_environment(project=tmp_path, environ=env)
    assert registry.agent_target("mine") == f"{tmp_path / 'a.py'}:build"
    assert ui.ui_environment(db=None, agents={}, tools={}, environ={}) == {}


def test_main_hands_the_checked_entries_to_the_app(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    seen = {}

    def fake_run_ui(**kwargs):
        seen.update(kwargs)
        return 0

    monkeypatch.setattr(ui, "run_ui", fake_run_ui)
    status = main(["ui", "--port", "9000", "--agent", "a=a.py:f", "--tools", "t=pkg.tools"])
    assert status == 0
    assert seen == {
        "host": None,
        "port": 9000,
        "db": None,
        "agents": {"a": f"{tmp_path / 'a.py'}:f"},
        "tools": {"t": "pkg.tools"},
        "mcp": {},
        "reload": True,  # --agent names a .py file: its saves are watched.
    }


def test_reload_is_on_for_file_targets_and_the_flags_override_it(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    seen = {}
    monkeypatch.setattr(ui, "run_ui", lambda **kwargs: seen.update(kwargs) or 0)

    def reload(*args: str) -> bool:
        assert main(["ui", *args]) == 0
        return seen["reload"]

    assert reload() is False
    assert reload("--agent", "a=pkg.agent:build") is False  # Installed code, not a file.
    assert reload("--tools", "t=my_tools.py") is True
    assert reload("--agent", "a=a.py:f", "--no-reload") is False
    assert reload("--reload") is True
    from stepwise.app.components.code_watch import RELOAD_ENV

    assert ui.RELOAD_ENV == RELOAD_ENV  # What the command sets is what the app reads.
    env = ui.ui_environment(db=None, agents={}, tools={}, environ={ui.RELOAD_ENV: "1"})
    assert ui.RELOAD_ENV not in env  # The command's flag decides.
    env = ui.ui_environment(db=None, agents={}, tools={}, environ={}, reload=True)
    assert env == {ui.RELOAD_ENV: "1"}


def test_no_subcommand_prints_the_help(capsys):
    assert main([]) == 2
    assert "ui" in capsys.readouterr().err


def test_stepwise_ui_help_runs_as_an_installed_command(tmp_path):
    script = shutil.which("stepwise", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "stepwise.cli"]
    done = subprocess.run(
        [*command, "ui", "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "--agent NAME=TARGET" in done.stdout and "[tool.stepwise]" in done.stdout
    module = subprocess.run(
        [sys.executable, "-m", "stepwise.cli", "ui", "--agent", "oops"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert module.returncode == 2 and "expected NAME=TARGET" in module.stderr
