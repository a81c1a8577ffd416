"""The errors of cases and replay, each with a stable code listed in `agent_core.errors`.

A bad case file is the user's input, so `CaseFileError` is a `UserError` that names the file,
the field or step, and what to do; `stepwise test` answers it with exit status 2 and runs the
other cases. A replay that cannot start says why in `ReplayUnsupportedError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_core.errors import AgentCoreError, UserError

__all__ = ["CaseCheckError", "CaseFileError", "ReplayDivergedError", "ReplayUnsupportedError"]


class CaseFileError(UserError):
    """A case file cannot be read: not JSON, an unknown format, a missing or wrong field.

    Attributes:
        file: The file's path, as given.
        field: Where in the file, as a dotted path (`steps.3.reply`); "" for the whole file.
    """

    default_code = "case_malformed"

    def __init__(
        self,
        message: str,
        *,
        file: str | Path,
        field: str = "",
        code: str = "",
        hint: str = "",
        params: dict[str, Any] | None = None,
    ) -> None:
        facts = {"file": str(file), **({"field": field} if field else {}), **(params or {})}
        super().__init__(message, hint=hint, code=code, params=facts)
        self.file = str(file)
        self.field = field


class CaseCheckError(UserError):
    """A case's Python check (`module:function`) could not be imported, or it raised."""

    default_code = "case_check_failed"


class ReplayUnsupportedError(UserError):
    """The case's agent cannot be replayed from the recording (it calls its model itself)."""

    default_code = "replay_unsupported"


class ReplayDivergedError(AgentCoreError):
    """Raised inside a replayed step by a stand-in that met a request the recording lacks.

    It stops the step; the replay reads the divergence from its log, not from this error.
    """

    default_code = "replay_diverged"
