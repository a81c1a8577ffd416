"""`pytest --stepwise-cases DIR`: each case is an item whose failure message is the divergence."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.agent_core._user_projects import isolated_imports  # noqa: F401 - a fixture
from tests.agent_core.recordings._projects import change_agent, write_agent
from tests.stepwise.cli.test_cases_cli import record

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.usefixtures("isolated_imports")

PLUGIN = ("-p", "stepwise.pytest_plugin", "-p", "no:cacheprovider")


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    write_agent(pytester.path)
    record(pytester.path, name="adds")
    pytester.makepyfile(test_own="def test_own():\n    assert True\n")
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return pytester.path


def test_the_plugin_is_a_pytest11_entry_point() -> None:
    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"stepwise": "stepwise.pytest_plugin"}


def test_loading_the_plugin_imports_no_part_of_stepwise_runtime() -> None:
    # Every pytest run of a project with Stepwise installed loads it: it must cost nothing.
    code = (
        "import sys, stepwise.pytest_plugin; "
        "print(sorted(m for m in sys.modules if m.startswith('agent_core')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_the_option_no_case_is_collected(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=1)  # The project's own test only.
    assert "adds" not in result.stdout.str()


def test_each_case_is_an_item_that_passes_on_unchanged_code(
    pytester: pytest.Pytester, project: Path
) -> None:
    result = pytester.runpytest(*PLUGIN, "--stepwise-cases", "stepwise_cases", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*stepwise_cases/adds.case.json::adds PASSED*"])


def test_a_diverged_case_fails_with_the_divergence(
    pytester: pytest.Pytester, project: Path
) -> None:
    change_agent(project, "return a + b", "return a + b + 1")
    result = pytester.runpytest(*PLUGIN, "--stepwise-cases", "stepwise_cases")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "diverged at step 1: step 1 (llm): tool add returned something else" in out
    result.stdout.fnmatch_lines(["-5", "+6"])
    assert "Traceback" not in out and "replay.py" not in out  # The divergence, not our frames.


def test_a_malformed_case_fails_naming_its_file(pytester: pytest.Pytester, project: Path) -> None:
    (project / "stepwise_cases" / "broken.case.json").write_text("{")
    result = pytester.runpytest(*PLUGIN, "--stepwise-cases", "stepwise_cases")
    result.assert_outcomes(passed=2, failed=1)
    assert "broken.case.json: not JSON" in result.stdout.str()
