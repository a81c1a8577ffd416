"""`stepwise ui|serve --mcp NAME=SERVER`: checked, and handed to the app's registry.

No server is started here: the app starts it when it first lists it (tests/e2e does that).
"""

from __future__ import annotations

import json

import pytest

from agent_core.user_code.registry import MCP_ENV, UserCodeRegistry
from stepwise.cli import serve, ui
from stepwise.cli.main import build_parser, main


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    assert exited.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("command", ["ui", "serve"])
def test_mcp_servers_are_parsed_as_typed(command):
    args = build_parser().parse_args(
        [
            command,
            "--mcp", "time=uvx mcp-server-time --local-timezone 'Europe/Paris'",
            "--mcp", "docs=http://127.0.0.1:8000/mcp",
        ]
    )  # fmt: skip
    assert args.mcp == [
        ("time", "uvx mcp-server-time --local-timezone 'Europe/Paris'"),
        ("docs", "http://127.0.0.1:8000/mcp"),
    ]
    assert build_parser().parse_args([command]).mcp == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mcp", "time"], "expected NAME=SERVER"),
        (["--mcp", "=uvx x"], "expected NAME=SERVER"),
        (["--mcp", "calculator=uvx x"], "is a built-in tool's name"),
        (["--mcp", "time=uvx 'open"], "cannot be split into words"),
        (["--mcp", "a b=uvx x"], "MCP server name 'a b' is not allowed"),
        (["--mcp", "t=uvx x", "--mcp", "t=uvx y"], "--mcp t=... is given twice"),
    ],
)
@pytest.mark.parametrize("command", ["ui", "serve"])
def test_bad_servers_are_refused_before_anything_starts(capsys, command, argv, message):
    err = refused(capsys, command, *argv)
    assert message in err and f"usage: stepwise {command}" in err


def test_the_app_gets_the_servers_in_its_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    seen = {}

    def fake_run_ui(**kwargs):
        seen.update(kwargs)
        return 0

    monkeypatch.setattr(ui, "run_ui", fake_run_ui)
    assert main(["ui", "--mcp", "time=uvx mcp-server-time"]) == 0
    assert seen["mcp"] == {"time": "uvx mcp-server-time"}

    env = ui.ui_environment(db=None, agents={}, tools={}, mcp=seen["mcp"], environ={})
    assert json.loads(env[MCP_ENV]) == {"time": "uvx mcp-server-time"}
    registry = UserCodeRegistry.from_environment(project=tmp_path, environ=env)
    assert registry.mcp_server("time") == "uvx mcp-server-time"
    # Without the flag, a stale variable inherited from the shell does not reach the app.
    stale = ui.ui_environment(db=None, agents={}, tools={}, environ={MCP_ENV: '{"old": "x"}'})
    assert MCP_ENV not in stale


def test_serve_hands_the_servers_on(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    seen = {}

    def fake_run_server(**kwargs):
        seen.update(kwargs)
        return 0

    monkeypatch.setattr(serve, "run_server", fake_run_server)
    assert main(["serve", "--mcp", "docs=http://127.0.0.1:8000/mcp"]) == 0
    assert seen["mcp"] == {"docs": "http://127.0.0.1:8000/mcp"}


def test_the_help_explains_the_flag(capsys):
    with pytest.raises(SystemExit):
        main(["ui", "--help"])
    out = capsys.readouterr().out
    assert "--mcp NAME=SERVER" in out and 'mcp = { time = "uvx mcp-server-time" }' in out
