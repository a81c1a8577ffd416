"""`make lint`'s import contracts bite: a new upward, sideways or deferred import breaks them.

Each test copies the packages and pyproject.toml into a folder of its own, adds one import
there, and runs `lint-imports` on the copy; the checkout itself is never touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "agent_core",
    "stepwise",
    "components",
    "agent_services",
    "stepwise_server",
    "stepwise_cli",
)
CONTRACTS = {
    contract["id"]: contract["name"]
    for contract in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the packages and the contracts, to break."""
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    # The copy first on the path, so grimp reads it and not the installed checkout.
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "200"}
    script = "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"
    return subprocess.run(
        [sys.executable, "-c", script, "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def verdicts(output: str) -> dict[str, str]:
    """Each contract's id -> "KEPT" or "BROKEN", from the report's summary lines."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        for contract_id, name in CONTRACTS.items():
            rest = line.removeprefix(name).split()
            if line.startswith(name) and rest and rest[0] in ("KEPT", "BROKEN"):
                found[contract_id] = rest[0]
    return found


def add_lines(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as file:
        file.write(text)


def test_the_untouched_copy_keeps_every_contract(tree):
    done = lint_imports(tree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert verdicts(done.stdout) == dict.fromkeys(CONTRACTS, "KEPT")
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in done.stdout


def test_the_runtime_importing_a_face_breaks_the_contracts(tree):
    # Deferred, inside a function: still an arrow from the bottom to the top.
    add_lines(
        tree / "agent_core" / "dag.py",
        "\n\ndef _upward():\n    from stepwise.server import create_app\n\n    return create_app\n",
    )
    done = lint_imports(tree)
    assert done.returncode == 1, done.stdout + done.stderr
    broken = {k for k, v in verdicts(done.stdout).items() if v == "BROKEN"}
    # The server holds a Host, so the arrow also reaches from `dag` up to `host` through it.
    assert broken == {"runtime-no-faces", "faces-layers", "runtime-layers"}
    assert "agent_core.dag -> stepwise.server" in done.stdout


def test_one_face_importing_the_other_breaks_the_faces_layers(tree):
    add_lines(
        tree / "stepwise" / "server" / "app.py",
        "\n\nfrom stepwise.services import ServicesClient  # noqa: E402\n",
    )
    done = lint_imports(tree)
    assert done.returncode == 1, done.stdout + done.stderr
    broken = {k for k, v in verdicts(done.stdout).items() if v == "BROKEN"}
    assert broken == {"faces-layers"}
    assert "stepwise.server is not allowed to import stepwise.services" in done.stdout


def test_a_type_checking_import_of_the_workers_breaks_the_runtime_layers(tree):
    # The runner's old knot, spelled the way it hid: only for the type checker.
    add_lines(
        tree / "agent_core" / "runtime" / "queue.py",
        "\n\nfrom typing import TYPE_CHECKING  # noqa: E402\n\nif TYPE_CHECKING:\n"
        "    from agent_core.workers.base import BaseAgentWorker\n",
    )
    done = lint_imports(tree)
    assert done.returncode == 1, done.stdout + done.stderr
    broken = {k for k, v in verdicts(done.stdout).items() if v == "BROKEN"}
    assert broken == {"runtime-layers", "no-sibling-cycles"}
    assert "agent_core.runtime.queue -> agent_core.workers.base" in done.stdout


def test_the_server_opening_a_store_itself_breaks_its_way_through_the_host(tree):
    add_lines(
        tree / "stepwise" / "server" / "app.py",
        "\n\nfrom agent_core.store.open import open_store  # noqa: E402\n",
    )
    done = lint_imports(tree)
    assert done.returncode == 1, done.stdout + done.stderr
    broken = {k for k, v in verdicts(done.stdout).items() if v == "BROKEN"}
    assert broken == {"server-through-host", "faces-open-stores-through-host"}
    assert "stepwise.server.app -> agent_core.store.open" in done.stdout


def test_a_cli_command_opening_a_store_itself_breaks_the_faces_way_through_the_host(tree):
    # Deferred, as a one-shot command would write it: still a face choosing its store alone.
    add_lines(
        tree / "stepwise" / "cli" / "db.py",
        "\n\ndef _own_store(target):\n    from agent_core.store.open import open_store\n\n"
        "    return open_store(target)\n",
    )
    done = lint_imports(tree)
    assert done.returncode == 1, done.stdout + done.stderr
    broken = {k for k, v in verdicts(done.stdout).items() if v == "BROKEN"}
    assert broken == {"faces-open-stores-through-host"}
    assert "stepwise.cli.db -> agent_core.store.open" in done.stdout
