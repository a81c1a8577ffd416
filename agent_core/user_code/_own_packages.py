"""Which top-level packages are Stepwise's own, read from its installed distribution.

"Reload my code" forgets the user's modules and must leave ours alone: re-importing
`stepwise.services` as if it were the user's would make a second copy of its classes. A
hand-written list goes stale as packages move, so the names come from the distribution's
metadata, as installed (a wheel or an editable checkout); a checkout that was never
installed falls back to the packages in the folder that holds `agent_core`.
"""

from __future__ import annotations

import functools
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path, PurePosixPath

from agent_core.extras import DISTRIBUTION

__all__ = ["is_own_module", "own_packages"]

_ANCHOR = "agent_core"
"""A package only our distribution installs: metadata without it belongs to another project."""


@functools.cache
def own_packages() -> frozenset[str]:
    """The top-level import names the `stepwise` distribution installs.

    Read from its `top_level.txt` (setuptools writes one for wheels and editable installs),
    else from the files its RECORD lists; when neither names `agent_core` (a checkout run
    without installing it, or another project's distribution of the same name), the
    packages in the folder that holds `agent_core`.
    """
    try:
        names = _from_metadata(distribution(DISTRIBUTION))
    except PackageNotFoundError:
        names = frozenset()
    return names if _ANCHOR in names else _beside_agent_core()


def is_own_module(name: str, real_name: str | None = None) -> bool:
    """Whether the module imported as `name` is ours.

    `real_name` is the module's own `__name__`: a deprecated alias such as `agent_services`
    is the moved module itself (`stepwise.services`), so it is ours by its real name even
    when the installed metadata predates the alias.
    """
    packages = own_packages()
    return any(
        candidate is not None and candidate.partition(".")[0] in packages
        for candidate in (name, real_name)
    )


def _from_metadata(dist: Distribution) -> frozenset[str]:
    top_level = dist.read_text("top_level.txt")
    if top_level:
        return frozenset(line.strip() for line in top_level.splitlines() if line.strip())
    return frozenset(
        name for path in dist.files or () if (name := _top_level_name(PurePosixPath(path)))
    )


def _top_level_name(path: PurePosixPath) -> str | None:
    """The import name a RECORD entry installs at the top level, if it installs one."""
    first = path.parts[0] if path.parts else ""
    if first in ("", "..") or first.endswith((".dist-info", ".data")) or first.startswith("__"):
        return None  # Scripts, metadata, the editable finder and its .pth.
    if len(path.parts) > 1:
        return first if first.isidentifier() else None
    return path.stem if path.suffix == ".py" and path.stem.isidentifier() else None


def _beside_agent_core() -> frozenset[str]:
    root = Path(__file__).resolve().parents[2]
    return frozenset(
        child.name
        for child in root.iterdir()
        if child.name.isidentifier() and (child / "__init__.py").is_file()
    )
