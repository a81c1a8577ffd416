"""Patches that fail the test when they patch nothing.

Replacing a module's attribute reaches only the code that looks the name up in that module
when it runs. After a move, the code may read the name somewhere else (`from x import name`
binds a copy where it is imported), and the patch then replaces a name nobody reads: the test
goes on passing while injecting nothing. These helpers make such a test fail instead.
"""

from __future__ import annotations

import dis
import functools
import inspect
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import CodeType, ModuleType
from typing import Any

import pytest

__all__ = ["CountingPatch", "PatchNotReached", "patch_callable", "patch_global", "readers_of"]

_OURS = ("agent_core", "stepwise", "components")


class PatchNotReached(AssertionError):
    """A patched name was never used: the code reads it somewhere else now."""


@dataclass
class CountingPatch:
    """A patched callable and how often the code under test called it."""

    where: str
    calls: int = 0

    def assert_reached(self) -> None:
        """Fail unless the code under test called the patched callable at least once."""
        if not self.calls:
            raise PatchNotReached(
                f"nothing called the patched {self.where}: the code under test no longer "
                "looks it up there (it moved, or is imported by name elsewhere); patch "
                "where it is called from"
            )


def patch_callable(
    monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, replacement: Callable[..., Any]
) -> CountingPatch:
    """Replace `owner.name` with `replacement` for the test, counting the calls it gets."""
    where = f"{getattr(owner, '__name__', owner)}.{name}"
    patch = CountingPatch(where)

    @functools.wraps(replacement)
    def counted(*args: Any, **kwargs: Any) -> Any:
        patch.calls += 1
        return replacement(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return patch


def patch_global(
    monkeypatch: pytest.MonkeyPatch, module: ModuleType, name: str, value: Any
) -> None:
    """Set the global `name` of `module` for the test, once sure that the patch reaches code.

    Raises:
        PatchNotReached: No code in `module` reads its global `name`, or another of our
            modules imported the same value by name and reads its own copy.
    """
    if not readers_of(module, name):
        raise PatchNotReached(
            f"no code in {module.__name__} reads its global {name}: patching it there "
            "changes nothing; patch the module that reads it"
        )
    original = getattr(module, name)
    copies = [
        other.__name__
        for other in list(sys.modules.values())
        if isinstance(other, ModuleType)
        and other is not module
        and other.__name__.partition(".")[0] in _OURS
        and vars(other).get(name) is original
        and readers_of(other, name)
    ]
    if copies:
        raise PatchNotReached(
            f"{', '.join(sorted(copies))} hold {name} too (imported by name) and read their "
            f"own copy: patching {module.__name__}.{name} does not reach them"
        )
    monkeypatch.setattr(module, name, value)


def readers_of(module: ModuleType, name: str) -> list[str]:
    """The functions and methods defined in `module` that read its global `name`."""
    return [
        qualname
        for qualname, code in _code_of(module)
        if any(
            ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval == name
            for inner in _nested(code)
            for ins in dis.get_instructions(inner)
        )
    ]


def _code_of(module: ModuleType) -> Iterator[tuple[str, CodeType]]:
    for value in list(vars(module).values()):
        if getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(value):
            yield value.__qualname__, value.__code__
        elif inspect.isclass(value):
            for member in vars(value).values():
                function = inspect.unwrap(getattr(member, "__func__", member))
                if isinstance(member, property):
                    function = member.fget
                if inspect.isfunction(function):
                    yield function.__qualname__, function.__code__


def _nested(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _nested(const)
