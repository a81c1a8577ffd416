"""Each command names the pip install line of the extra it needs when that is not installed.

Absence is simulated with None in `sys.modules` (see tests/agent_core/test_extras.py); what
would run if the check let it through (exec'ing Streamlit, serving, reaching a control plane)
is replaced by a recorder, and each test asserts it was never reached.
"""

from __future__ import annotations

import sys

import pytest

from stepwise.cli.main import main


class Reached(Exception):
    """A command got past its check and started what it runs."""


@pytest.fixture
def reached(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the commands would have started, had the check not stopped them."""
    import uvicorn

    started: list[str] = []

    def recorder(name: str):
        def start(*args: object, **kwargs: object) -> None:
            started.append(name)
            raise Reached(name)

        return start

    monkeypatch.setattr("os.execve", recorder("streamlit"))
    monkeypatch.setattr(uvicorn, "run", recorder("uvicorn"))
    monkeypatch.setattr("stepwise.cli.services.run_services", recorder("services"))
    return started


def test_the_recorders_catch_a_command_that_starts(monkeypatch, reached, tmp_path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Reached):
        main(["ui"])  # Everything installed: it gets as far as starting Streamlit.
    assert reached == ["streamlit"]


def absent(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError):
        __import__(module)


@pytest.mark.parametrize(
    ("argv", "module", "extra"),
    [
        (["ui"], "streamlit", "app"),
        (["serve"], "fastapi", "server"),
        (["services", "status"], "redis", "services"),
    ],
)
def test_a_command_without_its_extra_says_what_to_install(
    argv, module, extra, monkeypatch, capsys, reached, tmp_path
):
    monkeypatch.chdir(tmp_path)
    absent(monkeypatch, module)

    assert main(argv) == 1

    err = capsys.readouterr().err
    assert f"stepwise {argv[0]}: " in err
    assert f"needs the {module} package, which is not installed" in err
    assert f'pip install "stepwise[{extra}]"' in err
    assert reached == []
