"""Stepwise: a human-in-the-loop debugger for LLM agents.

The runtime is `agent_core` (`from agent_core import AgentRunner`); this package holds the
faces over it: `stepwise.cli` (the `stepwise` command), `stepwise.server` (`stepwise serve`:
Execute Agent and the Agent Protocol), `stepwise.services` (multi-agent services),
`stepwise.http` (what both HTTP APIs share) and `stepwise.app` (the Streamlit app's pages).
Importing this package loads none of them.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("stepwise")
except PackageNotFoundError:  # Run from a checkout that was never installed.
    __version__ = "0+unknown"

__all__ = ["__version__"]
