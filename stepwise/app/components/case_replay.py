"""Replay a case from the app: on the code as the app has it now, into the app's own store.

The replayed task is kept in the app's store (not the replay's default in-memory one), so a
failed case's task opens in the Stepper, where its steps can go on live from the divergence.
The user's code comes from the app's registry: after "Reload my code" a replay runs the new
files, like a new task would.
"""

from __future__ import annotations

import logging
from pathlib import Path

from agent_core import user_code
from agent_core.errors import AgentCoreError
from agent_core.recordings import Case, replay_case
from stepwise.app.components import runtime
from stepwise.app.components.case_files import ReplaySummary

__all__ = ["replay_here"]

logger = logging.getLogger("stepwise.app")


def replay_here(case: Case) -> ReplaySummary:
    """Replay `case` on the current code; its result as the pages keep it.

    Errors of the case or of the user's code come back in `ReplaySummary.error`, never raised:
    one broken case must not stop Run all.
    """
    try:
        result = replay_case(
            case,
            registry=user_code.default_registry(),
            store=runtime.shared_store(),
            project=Path.cwd(),
        )
    except AgentCoreError as exc:
        return ReplaySummary(passed=False, steps=0, error=exc.to_data())
    except Exception as exc:  # An agent spec the code no longer accepts, or a bug.
        logger.exception("replaying case %s failed", case.name)
        message = f"{type(exc).__name__}: {exc}"
        return ReplaySummary(
            passed=False, steps=0, error={"code": "replay_unsupported", "message": message}
        )
    return ReplaySummary.of(result)
