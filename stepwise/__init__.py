"""Stepwise: a human-in-the-loop debugger for LLM agents.

The runtime is `agent_core` (`from agent_core import AgentRunner`); this package holds the
faces over it: `stepwise.cli` (the `stepwise` command), `stepwise.server` (`stepwise serve`:
Execute Agent and the Agent Protocol), `stepwise.services` (multi-agent services),
`stepwise.http` (what both HTTP APIs share) and `stepwise.app` (the Streamlit app's pages).
Importing this package loads none of them.

`stepwise.session(db=...)` attaches your own program to a Stepwise database
(`agent_core.host.attach`): loaded when first named.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("stepwise")
except PackageNotFoundError:  # Run from a checkout that was never installed.
    __version__ = "0+unknown"

__all__ = ["__version__", "session"]


def __getattr__(name: str) -> Any:
    if name == "session":  # The runtime loads only for a program that attaches.
        from agent_core.host.attach import attach

        return attach
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
