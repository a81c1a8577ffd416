"""One table of moved import paths (`agent_core._moved._MOVED`) makes the aliases and the manual's
"What moved" table, and an alias past its release fails here rather than lingering."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

from packaging.version import Version

import stepwise
from agent_core._moved import _MOVED, MOVED_BEGIN, MOVED_END, Move, markdown_table

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = ROOT / "docs" / "layout.md"
STAND_IN = "sys.modules[__name__] = stand_in(__name__)"


def _versions() -> list[Version]:
    """The version being built (pyproject.toml) and the one installed, when it is known."""
    found = [Version(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])]
    if stepwise.__version__ != "0+unknown":
        found.append(Version(stepwise.__version__))
    return found


def overdue(version: Version) -> list[Move]:
    """The entries whose old path should be gone by `version`."""
    return [move for move in _MOVED if version >= Version(move.until)]


def test_no_alias_outlives_the_release_it_names() -> None:
    for version in _versions():
        late = [f"{move.old} (until {move.until})" for move in overdue(version)]
        assert late == [], (
            f"Stepwise {version} still carries aliases it said it would drop: {late}. Remove "
            "each entry from agent_core._moved._MOVED, its stand-in file at the old path, its "
            "import-linter lines, and rewrite docs/layout.md's table."
        )


def test_the_release_gate_bites() -> None:
    # The check above, at the release the current entries name, finds every one of them.
    first = min(Version(move.until) for move in _MOVED)
    assert overdue(first) == [m for m in _MOVED if Version(m.until) == first] != []
    assert overdue(Version("0.1.0")) == []


def test_the_manuals_table_is_the_one_generated_from_the_list() -> None:
    text = LAYOUT.read_text(encoding="utf-8")
    shown = text.partition(MOVED_BEGIN)[2].partition(MOVED_END)[0].strip()
    assert shown == markdown_table(), (
        "docs/layout.md's What moved table differs from agent_core._moved._MOVED; rewrite it: "
        '.venv/bin/python -c "from agent_core._moved import write_table; '
        "write_table('docs/layout.md')\""
    )


def _file_at(old: str) -> Path | None:
    base = ROOT.joinpath(*old.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _stands_in(path: Path) -> bool:
    return STAND_IN in path.read_text(encoding="utf-8").splitlines()


def test_an_old_path_outside_agent_core_has_a_stand_in_and_every_stand_in_is_listed() -> None:
    olds = {move.old for move in _MOVED}
    for move in _MOVED:
        if move.name:
            module = _file_at(move.old.rpartition(".")[0])
            assert module is not None and "moved_name(__name__, name)" in module.read_text()
            continue
        path = _file_at(move.old)
        if move.old.startswith("agent_core."):
            # `agent_core`'s finder serves it first: a file there would never run.
            assert path is None, f"{path} is dead: agent_core's finder serves {move.old}"
        else:
            assert path is not None, f"nothing stands in at {move.old}"
            assert _stands_in(path), path
    packages = [p.parent for p in ROOT.glob("*/__init__.py") if p.parent.name != "tests"]
    stand_ins = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for package in packages
        for path in package.rglob("*.py")
        if _stands_in(path)
    }
    assert stand_ins <= olds, f"stand-ins missing from _MOVED: {sorted(stand_ins - olds)}"


def test_every_old_path_is_the_moved_module_and_warns_with_its_new_place() -> None:
    # A fresh interpreter: each old path is imported for the first time, as a user's code does.
    code = textwrap.dedent(
        """
        import importlib, json, warnings
        from agent_core._moved import _MOVED

        found = {}
        def load(path, name):
            if not name:
                return importlib.import_module(path)
            module, _, attr = path.rpartition(".")
            return getattr(importlib.import_module(module), attr)

        for move in _MOVED:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                old = load(move.old, move.name)
            new = load(move.new, move.name)
            said = [
                str(w.message) for w in caught
                if w.category is DeprecationWarning and move.new in str(w.message)
            ]
            found[move.old] = [old is new, bool(said)]
        # A package's modules moved with it, one module by either path.
        import stepwise.services.client as client
        import agent_services.client
        found["agent_services.client"] = [agent_services.client is client, True]
        print(json.dumps(found))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found == {
        **{move.old: [True, True] for move in _MOVED},
        "agent_services.client": [True, True],
    }
