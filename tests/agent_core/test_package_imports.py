"""`agent_core`'s public names load on first use, and an import cut short leaves no trap.

Streamlit can stop a page while it is importing the runtime; before the names were lazy, the
package's `__init__` imported the runner while the runner's own imports needed the package, and
the next page then failed with "cannot import name 'AgentRunner' from partially initialized
module" (seen in Chromium on the Settings page).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import agent_core


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_every_public_name_resolves_to_its_home() -> None:
    for name in agent_core.__all__:
        assert getattr(agent_core, name).__name__ == name
    assert sorted(agent_core.__all__) == sorted(agent_core._HOME_OF)


def test_importing_the_package_or_a_submodule_loads_no_runner() -> None:
    out = _run(
        """
        import sys
        import agent_core, agent_core.types, agent_core.errors
        print("agent_core.runtime.runner" in sys.modules)
        """
    )
    assert out == "False"


def test_an_import_cut_short_inside_the_runner_leaves_the_next_import_working() -> None:
    out = _run(
        """
        import importlib.abc, sys

        class CutShort(importlib.abc.MetaPathFinder):
            hits = 0
            def find_spec(self, name, path=None, target=None):
                if name == "agent_core.runtime.transaction" and not self.hits:
                    self.hits += 1
                    raise KeyboardInterrupt("the page stopped mid-import")
                return None

        cut = CutShort()
        sys.meta_path.insert(0, cut)
        try:
            from agent_core.spec import AgentSpec
        except KeyboardInterrupt:
            pass
        assert cut.hits == 1, "the import was never cut short"
        from agent_core.spec import AgentSpec
        from agent_core import AgentRunner, ReActAgent
        print(AgentRunner.__module__, ReActAgent.__module__)
        """
    )
    assert out == "agent_core.runtime.runner agent_core.compat.llamaindex.agents"
