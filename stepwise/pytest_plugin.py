"""`pytest --stepwise-cases DIR`: each saved case is a test item; its failure is the divergence.

Registered as a `pytest11` entry point, so installing Stepwise is enough. Without the option
the plugin adds one option and does nothing else: it imports no part of Stepwise, collects
nothing and costs a project's own test run nothing.

Options: `--stepwise-cases DIR` (repeatable; a folder or a case file), `--stepwise-tools
auto|recorded|live`, `--stepwise-agent NAME=TARGET` (as `stepwise test --agent`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from agent_core.recordings import Case

_SUFFIX = ".case.json"  # agent_core.recordings.cases.CASE_SUFFIX, without importing it.


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add `--stepwise-cases`, `--stepwise-tools` and `--stepwise-agent`."""
    group = parser.getgroup("stepwise", "Stepwise cases (tasks kept as tests)")
    group.addoption(
        "--stepwise-cases",
        action="append",
        default=[],
        metavar="DIR",
        help="collect each *.case.json under DIR as a test replayed on the current code",
    )
    group.addoption(
        "--stepwise-tools",
        choices=("auto", "recorded", "live"),
        default=None,
        help="how replayed cases answer tools (default: each case's own, auto)",
    )
    group.addoption(
        "--stepwise-agent",
        default=None,
        metavar="NAME=TARGET",
        help="replay the cases on this agent instead of their own",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Add the case folders to what pytest collects (they need not be under testpaths)."""
    folders = config.getoption("stepwise_cases")
    if folders:
        config.args = [*config.args, *(str(Path(folder)) for folder in folders)]
        config.stash[_FOLDERS] = [Path(folder).resolve() for folder in folders]


_FOLDERS = pytest.StashKey[list[Path]]()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A case file under a `--stepwise-cases` folder, as a file of one test."""
    folders = parent.config.stash.get(_FOLDERS, None)
    if not folders or not file_path.name.endswith(_SUFFIX):
        return None
    resolved = file_path.resolve()
    if not any(resolved == folder or folder in resolved.parents for folder in folders):
        return None
    return CaseFile.from_parent(parent, path=file_path)


class CaseFile(pytest.File):
    """One `NAME.case.json`."""

    def collect(self) -> list[pytest.Item]:  # noqa: D102 - pytest's
        name = self.path.name.removesuffix(_SUFFIX)
        return [CaseItem.from_parent(self, name=name)]


class CaseDiverged(Exception):
    """The case failed: a divergence, a failed expectation, or an error; the message says."""


class CaseItem(pytest.Item):
    """A case replayed on the current code of its agent."""

    def runtest(self) -> None:
        """Load and replay the case; fail with the divergence or the failed expectation."""
        from agent_core.recordings import load_case, replay_case
        from agent_core.user_code.registry import parse_entry

        case: Case = load_case(self.path)
        option = self.config.getoption("stepwise_agent")
        agent = parse_entry(option, kind="agent", base=Path.cwd()) if option else None
        result = replay_case(
            case,
            agent=agent,
            tools=self.config.getoption("stepwise_tools"),
            project=Path.cwd(),
        )
        if not result.passed:
            raise CaseDiverged(result.report())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """The divergence and its diff, or a bad case's error, without a traceback."""
        from agent_core.errors import AgentCoreError

        if isinstance(excinfo.value, CaseDiverged | AgentCoreError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the case is, for pytest's report."""
        return self.path, None, f"stepwise case: {self.name}"
