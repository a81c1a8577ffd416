""" "Reload my code" forgets the user's modules and none of Stepwise's own."""

from __future__ import annotations

import sys
import textwrap
import warnings
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError
from pathlib import Path
from types import ModuleType

import pytest

from agent_core.llms import ScriptedLLM
from agent_core.user_code import _own_packages
from agent_core.user_code._own_packages import is_own_module, own_packages
from agent_core.user_code.registry import UserCodeRegistry
from tests.agent_core._user_projects import isolated_imports

pytestmark = pytest.mark.usefixtures(isolated_imports.__name__)

AGENT = """
import helper
import stepwise.services
from stepwise.services import SimpleMessageQueue
import agent_services  # the deprecated alias of stepwise.services

from agent_core.workers import CustomSimpleAgentWorker


class EchoWorker(CustomSimpleAgentWorker):
    def _run_step(self, state, task, input):
        return f"{helper.WORD} {SimpleMessageQueue.__name__}", True


def build():
    return EchoWorker()
"""


@pytest.fixture
def fresh_metadata() -> Iterator[None]:
    """`own_packages` reads the metadata once per process; these tests read it again."""
    own_packages.cache_clear()
    yield
    own_packages.cache_clear()


def _ours() -> dict[str, ModuleType]:
    return {
        name: module
        for name, module in sys.modules.items()
        if name.partition(".")[0] in {"agent_core", "stepwise", "components", "agent_services"}
    }


def test_a_reload_drops_the_users_modules_and_none_of_stepwises(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("WORD = 'hello'\n")
    (tmp_path / "mine.py").write_text(textwrap.dedent(AGENT).lstrip())
    registry = UserCodeRegistry(project=tmp_path, agents={"mine": "mine.py:build"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        registry.build_agent("mine", llm=ScriptedLLM([]))
    assert "helper" in sys.modules and "stepwise.services.message_queues.simple" in sys.modules
    ours = _ours()
    assert sys.modules["agent_services"] is sys.modules["stepwise.services"]

    registry.reload()

    assert "helper" not in sys.modules
    still = _ours()
    dropped = sorted(name for name in ours if still.get(name) is not ours[name])
    assert dropped == [], "a reload re-imports Stepwise's own modules"


def test_the_installed_distribution_names_our_packages(fresh_metadata: None) -> None:
    assert {"agent_core", "components", "stepwise"} <= own_packages()
    assert "tests" not in own_packages()  # The checkout's tests are not installed.
    assert is_own_module("stepwise.services.client")
    assert is_own_module("agent_services", real_name="stepwise.services")
    assert not is_own_module("helper", real_name="helper")


class _Metadata:
    """A distribution as `importlib.metadata` gives it, with what its metadata holds."""

    def __init__(self, top_level: str | None, files: list[str]) -> None:
        self._top_level = top_level
        self.files = files
        self.read: list[str] = []

    def read_text(self, name: str) -> str | None:
        self.read.append(name)
        return self._top_level if name == "top_level.txt" else None


def _installed(monkeypatch: pytest.MonkeyPatch, dist: _Metadata | None) -> list[str]:
    asked: list[str] = []

    def distribution(name: str) -> _Metadata:
        asked.append(name)
        if dist is None:
            raise PackageNotFoundError(name)
        return dist

    monkeypatch.setattr(_own_packages, "distribution", distribution)
    return asked


def test_without_top_level_txt_the_record_names_the_packages(
    monkeypatch: pytest.MonkeyPatch, fresh_metadata: None
) -> None:
    dist = _Metadata(
        None,
        [
            "agent_core/__init__.py",
            "stepwise/services/client.py",
            "agent_services/__init__.py",
            "stepwise-0.2.0.dist-info/RECORD",
            "__editable__.stepwise-0.2.0.pth",
            "../../../bin/stepwise",
            "py.typed",
        ],
    )
    asked = _installed(monkeypatch, dist)
    assert own_packages() == {"agent_core", "stepwise", "agent_services"}
    assert asked == ["stepwise"] and dist.read == ["top_level.txt"]


def test_a_checkout_never_installed_takes_the_packages_beside_agent_core(
    monkeypatch: pytest.MonkeyPatch, fresh_metadata: None
) -> None:
    asked = _installed(monkeypatch, None)
    packages = own_packages()
    assert asked == ["stepwise"]
    assert {"agent_core", "components", "stepwise"} <= packages


def test_another_projects_stepwise_distribution_is_not_taken_for_ours(
    monkeypatch: pytest.MonkeyPatch, fresh_metadata: None
) -> None:
    asked = _installed(monkeypatch, _Metadata("stepwise_other\n", []))
    assert "agent_core" in own_packages() and "stepwise_other" not in own_packages()
    assert asked == ["stepwise"]
