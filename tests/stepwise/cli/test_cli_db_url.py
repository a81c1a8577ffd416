"""`--db` takes a team's database URL as well as a SQLite path, and logs it without its password."""

from __future__ import annotations

import pytest

from stepwise.cli import ui
from stepwise.cli.main import build_parser, main

URL = "postgresql://team:s3cret@db.internal:5432/stepwise?schema=team"


@pytest.mark.parametrize("command", ["ui", "serve"])
def test_a_url_is_passed_on_as_given(command: str) -> None:
    args = build_parser().parse_args([command, "--db", URL])
    assert args.db == URL  # Not resolved as a path under the working folder.
    env = ui.ui_environment(db=args.db, agents={}, tools={}, environ={})
    assert env["STEPWISE_DB"] == URL


def test_stepwise_ui_names_the_database_without_its_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    started: list[dict[str, str]] = []
    monkeypatch.setattr(ui.os, "execve", lambda _exe, _cmd, env: started.append(env))
    monkeypatch.setattr(ui.subprocess, "call", lambda *_a, **_k: 0)  # After a real execve, none.
    monkeypatch.setattr(ui, "require", lambda *_a, **_k: None)
    assert main(["ui", "--db", URL]) == 0
    assert started and started[0]["STEPWISE_DB"] == URL  # The app gets the password...
    err = capsys.readouterr().err
    assert "db.internal" in err and "s3cret" not in err  # ...the log does not.
