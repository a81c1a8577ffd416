"""Old import paths that keep working for one release, as aliases that warn.

An alias is the moved module itself, not a copy, so a class imported by either path is one
class and a test that patches a name patches it for both.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Mapping, Sequence
from types import ModuleType


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self._target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self._target)
        self._real_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamps the alias's spec on the module; give it back its own.
        module.__spec__ = self._real_spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Maps `old` and `old.x.y` to `new` and `new.x.y`, warning once per old name."""

    def __init__(self, moves: Mapping[str, str], *, release: str) -> None:
        self._moves = dict(moves)
        self._release = release

    def _target(self, fullname: str) -> str | None:
        for old, new in self._moves.items():
            if fullname == old or fullname.startswith(old + "."):
                return new + fullname[len(old) :]
        return None

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = self._target(fullname)
        if new is None:
            return None
        warnings.warn(
            f"{fullname} moved to {new}; the old path works until Stepwise {self._release}",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def alias_modules(moves: Mapping[str, str], *, release: str = "0.3") -> None:
    """Make each old module path (and everything under it) import the new one, with a warning."""
    sys.meta_path.insert(0, _AliasFinder(moves, release=release))


def alias_package(old: str, new: str) -> ModuleType:
    """Stand in for the package `old` from its `__init__`: warn, alias its modules, give `new`."""
    warnings.warn(
        f"the package {old} moved to {new}; the old name works until Stepwise 0.3",
        DeprecationWarning,
        stacklevel=3,
    )
    alias_modules({old: new})
    return importlib.import_module(new)
