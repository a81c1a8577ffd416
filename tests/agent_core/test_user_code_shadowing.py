"""A user's `components` package, shadowed by Stepwise's: the error names the clash.

The app imported Stepwise's top-level `components` before any user code; it is now
`stepwise.app.components`, and the old name an alias for one release (agent_core._moved), which
still shadows a user's own package once something imports it. Then a user's agent doing
`from components.widgets import ...` looks inside ours. Each test checks that ours is the
`components` loaded (the clash really happens) before it reads the error.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path

import pytest

from agent_core.user_code.registry import UserCodeRegistry
from agent_core.user_code.shadowing import explain_clash
from tests.agent_core._user_projects import isolated_imports, write_project

with warnings.catch_warnings():  # The old name, imported on purpose: its warning is expected.
    warnings.simplefilter("ignore", DeprecationWarning)
    components = importlib.import_module("components")

pytestmark = pytest.mark.usefixtures(isolated_imports.__name__)

OURS = Path(components.__file__).parent

AGENT = """
from components.widgets import GREETING
from agent_core.workers import CustomSimpleAgentWorker


class Echo(CustomSimpleAgentWorker):
    def _run_step(self, state, task, input):
        return GREETING, True


def build():
    return Echo()
"""


def load_error(folder: Path, **agents: str):
    (entry,) = UserCodeRegistry(project=folder, agents=agents).agents()
    assert sys.modules["components"] is components  # Ours is the one loaded: the clash.
    assert entry.error is not None
    return entry.error


def test_the_users_components_package_is_named_as_shadowed_with_what_to_do(tmp_path):
    folder = write_project(
        tmp_path,
        {"components/__init__.py": "", "components/widgets.py": "GREETING = 'hi'\n", "a.py": AGENT},
    )

    error = load_error(folder, mine="a.py:build")

    message = str(error)
    assert "could not import agent 'mine'" in message
    assert "No module named 'components.widgets'" in message
    assert f"Stepwise has a package named 'components' too (the app's own, {OURS})" in message
    assert f"not in your {folder / 'components'}" in message
    assert "Rename your package (say, components_local) and its imports" in message
    assert "ModuleNotFoundError: No module named 'components.widgets'" in error.traceback


def test_a_missing_components_submodule_is_a_clash_even_when_the_package_lives_elsewhere(
    tmp_path,
):
    folder = write_project(tmp_path, {"a.py": AGENT})  # Their components is installed elsewhere.

    message = str(load_error(folder, mine="a.py:build"))

    assert "Stepwise has a package named 'components' too" in message
    assert "not in your own 'components' package" in message


def test_other_import_errors_keep_the_usual_advice(tmp_path):
    folder = write_project(tmp_path, {"a.py": "import no_such_package_here\n"})

    message = str(load_error(folder, mine="a.py:build"))

    assert "Stepwise has a package" not in message
    assert "install what is missing" in message


def test_only_import_errors_about_our_package_names_are_clashes(tmp_path):
    missing_elsewhere = ModuleNotFoundError("No module named 'acme.x'", name="acme.x")
    ours_but_fine = ModuleNotFoundError("No module named 'agent_core.nope'", name="agent_core.nope")
    assert explain_clash(missing_elsewhere, [tmp_path]) is None
    assert explain_clash(ours_but_fine, [tmp_path]) is None  # A typo in our name, no copy.
    assert explain_clash(ValueError("components.widgets"), [tmp_path]) is None
    (tmp_path / "agent_core").mkdir()  # The user has a package of that name: a clash.
    assert "named 'agent_core' too" in (explain_clash(ours_but_fine, [tmp_path]) or "")
