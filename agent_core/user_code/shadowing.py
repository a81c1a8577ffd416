"""A user's package that has the name of one of Stepwise's own: why its import failed.

Stepwise installs a few top-level packages (`own_packages()`), one with a name common in
Streamlit projects: `components`, until Stepwise 0.3 the alias of the app's Streamlit pieces
(now `stepwise.app.components`, which the app imports instead). Once something has imported
it, `import components.widgets` looks inside Stepwise's `components`, not the user's, and fails
with a `ModuleNotFoundError` that names neither. `explain_clash`
turns such a failure into a sentence that names both packages and what to do.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from agent_core.user_code._own_packages import own_packages

__all__ = ["CLASH_PRONE", "explain_clash"]

CLASH_PRONE = frozenset({"components"})
"""Our packages whose names users' projects often have: a missing submodule is taken for a
clash even where the user's own package is not found (it may live anywhere on the path)."""


def _user_copy(name: str, folders: Iterable[Path]) -> Path | None:
    """The user's package or module called `name` in one of `folders`, if there is one."""
    for folder in folders:
        for candidate in (folder / name, folder / f"{name}.py"):
            if candidate.exists():
                return candidate
    return None


def _loaded_from(module_name: str) -> Path | None:
    """Where the loaded module `module_name` lives (its folder for a package), if loaded."""
    module = sys.modules.get(module_name)
    filename = getattr(module, "__file__", None)
    if not filename:
        return None
    path = Path(filename)
    return path.parent if path.name == "__init__.py" else path


def explain_clash(exc: BaseException, folders: Iterable[Path]) -> str | None:
    """Why `exc` is a clash with a package of Stepwise's own; None when it is not one.

    Args:
        exc: What importing the user's module raised.
        folders: The user's folders (the project's, the entry file's), where their own
            package of the same name would be.

    Returns:
        Advice naming the clash and what to do, or None when the failed import has nothing
        to do with a name that Stepwise's packages hold.
    """
    if not isinstance(exc, ImportError) or not exc.name:
        return None
    top = exc.name.partition(".")[0]
    ours = _loaded_from(top)
    if top not in own_packages() or ours is None:
        return None
    theirs = _user_copy(top, folders)
    if theirs is None and not (top in CLASH_PRONE and exc.name != top):
        return None
    if theirs is not None and theirs.resolve() == ours.resolve():
        return None  # The project is Stepwise's own checkout: no clash.
    where = f"your {theirs}" if theirs is not None else f"your own {top!r} package"
    return (
        f"Stepwise has a package named {top!r} too (the app's own, {ours}), imported before "
        f"your code, so {exc.name!r} was looked for there and not in {where}. Rename your "
        f"package (say, {top}_local) and its imports, or load it under another name "
        "(importlib.util.spec_from_file_location)"
    )
