"""Old import paths that keep working for one release, as aliases that warn: one table, `_MOVED`.

The table is the only list: the aliases are made from it, the manual's "What moved" table is
generated from it (`write_table("docs/layout.md")`), and a test fails once the
package's version reaches an entry's `until` with the entry still here, so an alias is removed
when it said it would be rather than lingering.

An alias is the moved module itself, not a copy, so a class imported by either path is one
class and a test that patches a name patches it for both.

Three ways an old path is served, decided by what and where it is:

- a name moved out of a module: by that module's `__getattr__`, which calls `moved_name`;
- under `agent_core.`: by a finder that importing `agent_core` installs (`install()`); any
  import of `agent_core.x` runs `agent_core/__init__` first, so no file is left at the old path;
- anywhere else (an old top-level package, a module of `stepwise`): by a small file left at the
  old path whose body is `sys.modules[__name__] = stand_in(__name__)`. A finder of ours would
  have to sit in front of every import to serve those, and would then shadow a user's own
  package of the same name (a project's own `components/`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Move:
    """One old import path and where it went."""

    old: str
    """The old dotted path; for a package, every module under it moved with it."""
    new: str
    """Where it is now."""
    until: str
    """The release that removes the old path (while the version is below it, the path works)."""
    name: bool = False
    """`old` and `new` end in a name defined in a module, not a module: the old module's
    `__getattr__` serves it (`moved_name`)."""


_MOVED: tuple[Move, ...] = (
    # The faces' old top-level packages, from before the one `stepwise` root (Stepwise 0.1).
    Move("stepwise_server", "stepwise.server", until="0.3"),
    Move("agent_services", "stepwise.services", until="0.3"),
    Move("stepwise_cli", "stepwise.cli", until="0.3"),
    # The app's Streamlit pieces, a fourth root beside agent_core and stepwise whose name
    # clashed with a user's own `components` package.
    Move("components", "stepwise.app.components", until="0.3"),
    # What both HTTP faces share, from when only the server had it.
    Move("stepwise.server.errors", "stepwise.http.errors", until="0.3"),
    Move("stepwise.server.security", "stepwise.http.security", until="0.3"),
    # Public paths from before the runtime became a package (Stepwise 0.1).
    Move("agent_core.runner", "agent_core.runtime.runner", until="0.3"),
    Move("agent_core.parallel", "agent_core.runtime.parallel", until="0.3"),
    Move("agent_core.breakpoints", "agent_core.runtime.breakpoints", until="0.3"),
    Move("agent_core.step_runs", "agent_core.runtime.step_runs", until="0.3"),
    Move("agent_core.streaming_response", "agent_core.runtime.streaming_response", until="0.3"),
    Move("agent_core.agents", "agent_core.compat.llamaindex.agents", until="0.3"),
    Move(
        "agent_core.structured_planner",
        "agent_core.compat.llamaindex.structured_planner",
        until="0.3",
    ),
    Move("agent_core.pipeline", "agent_core.workers.pipeline", until="0.3"),
    # The store conformance suite drives a runner: it is a test package above the runtime.
    Move("agent_core.store.testing", "agent_core.testing.stores", until="0.3"),
    # How a step to run is chosen belongs with the queue's other rules, not the LlamaIndex API.
    Move(
        "agent_core.runtime.llamaindex_api.resolve_step",
        "agent_core.runtime.queue.resolve_step",
        until="0.3",
        name=True,
    ),
)

MOVED_BEGIN = "<!-- moved: generated from agent_core._moved._MOVED -->"
MOVED_END = "<!-- /moved -->"


def move_of(old: str) -> Move:
    """The table's entry for the old path `old` (KeyError: it is not there)."""
    for move in _MOVED:
        if move.old == old:
            return move
    raise KeyError(f"{old} is not in agent_core._moved._MOVED")


def _message(old: str, move: Move) -> str:
    new = move.new + old[len(move.old) :]
    return f"{old} moved to {new}; the old path works until Stepwise {move.until}"


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
    """Maps each move's `old` and `old.x.y` to `new` and `new.x.y`, warning once per old name."""

    def __init__(self, moves: Iterable[Move]) -> None:
        self._moves = tuple(moves)

    def _move(self, fullname: str) -> Move | None:
        for move in self._moves:
            if fullname == move.old or fullname.startswith(move.old + "."):
                return move
        return None

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        move = self._move(fullname)
        if move is None:
            return None
        new = move.new + fullname[len(move.old) :]
        if importlib.util.find_spec(new) is None:
            # Nothing moved there: fail as a missing module does, under the name imported.
            return None
        warnings.warn(_message(fullname, move), DeprecationWarning, stacklevel=2)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    """Serve the table's old `agent_core.` modules (run once, by `agent_core/__init__`)."""
    if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
        ours = (m for m in _MOVED if m.old.startswith("agent_core.") and not m.name)
        sys.meta_path.insert(0, _AliasFinder(ours))


def moved_name(module: str, name: str) -> Any:
    """For the `__getattr__` of a module a name moved out of: that name, with a warning.

    Raises:
        AttributeError: `name` is not a moved name of `module` (as a missing attribute does).
    """
    old = f"{module}.{name}"
    for move in _MOVED:
        if move.name and move.old == old:
            warnings.warn(_message(old, move), DeprecationWarning, stacklevel=3)
            home, _, attr = move.new.rpartition(".")
            return getattr(importlib.import_module(home), attr)
    raise AttributeError(f"module {module!r} has no attribute {name!r}")


def stand_in(old: str) -> ModuleType:
    """The module moved from `old`, for the file left at `old` to put in its own place.

    Warns, and for a package also serves every module under the old name.
    """
    move = move_of(old)
    warnings.warn(_message(old, move), DeprecationWarning, stacklevel=3)
    module = importlib.import_module(move.new)
    if hasattr(module, "__path__"):
        sys.meta_path.insert(0, _AliasFinder([move]))
    return module


def markdown_table() -> str:
    """The manual's "What moved" table, one row per entry of `_MOVED`."""
    rows = ["| was | is | the old path works until |", "|---|---|---|"]
    rows += [f"| `{m.old}` | `{m.new}` | Stepwise {m.until} |" for m in _MOVED]
    return "\n".join(rows)


def write_table(path: Path | str) -> bool:
    """Put the table between the markers in the Markdown file `path`; whether it changed."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    head, begin, rest = text.partition(MOVED_BEGIN)
    _, end, tail = rest.partition(MOVED_END)
    if not begin or not end:
        raise ValueError(f"{path} has no {MOVED_BEGIN} ... {MOVED_END} section")
    new = f"{head}{MOVED_BEGIN}\n{markdown_table()}\n{MOVED_END}{tail}"
    path.write_text(new, encoding="utf-8")
    return new != text
