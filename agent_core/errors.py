"""Every error the runtime raises, in one shallow tree under `AgentCoreError`.

Each message says what happened and what the user can do next.
"""

from __future__ import annotations

__all__ = [
    "AgentCoreError",
    "ConflictError",
    "InputTooLargeError",
    "LLMError",
    "NotReadyError",
    "NothingToRunError",
    "StepError",
    "StepNotFoundError",
    "StoreError",
    "TaskNotActiveError",
    "TaskNotFoundError",
    "ToolError",
    "UserCodeError",
    "UserError",
    "WorkerStateError",
]


class AgentCoreError(Exception):
    """Base of every error the runtime raises."""


class UserError(AgentCoreError):
    """The runtime was asked for something it cannot do as asked; the message says what to do."""


class TaskNotFoundError(UserError, KeyError):
    """No task with this id exists in the runner or its store."""

    def __str__(self) -> str:  # KeyError would wrap the message in quotes.
        return str(self.args[0]) if self.args else ""


class StepNotFoundError(UserError, KeyError):
    """No step with this id exists in the task."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class TaskNotActiveError(UserError):
    """The task is completed, abandoned or failed, so it cannot run further."""


class NothingToRunError(UserError):
    """The task has no upcoming step (or nothing to undo, or no last step to finalize)."""


class NotReadyError(UserError):
    """The chosen step waits on steps that have not completed yet."""


class InputTooLargeError(UserError):
    """A task input, step input or feedback text is over the runner's size limit."""


class ConflictError(UserError):
    """Another runner (another tab or process) changed or is running the same task."""


class StepError(AgentCoreError):
    """A step failed; it is recorded as `failed` and can be edited and retried."""

    def __init__(self, message: str, *, task_id: str = "", step_id: str = "") -> None:
        super().__init__(message)
        self.task_id = task_id
        self.step_id = step_id


class WorkerStateError(StepError):
    """A worker left state in the task that cannot be stored as JSON."""


class ToolError(AgentCoreError):
    """A tool call failed: bad arguments, or the tool itself raised."""

    def __init__(self, message: str, *, tool_name: str = "") -> None:
        super().__init__(message)
        self.tool_name = tool_name


class LLMError(AgentCoreError):
    """A model call failed; `status` and `retry_after` come from the provider when known.

    `timed_out` marks a call that got no answer in time (no status); such calls are retried.
    `retryable` overrides the rule by status (a 429 for an exhausted quota is not worth
    repeating).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        timed_out: bool = False,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.timed_out = timed_out
        self.retryable = retryable


class StoreError(AgentCoreError):
    """The store could not read or write; what was committed before is intact."""


class UserCodeError(AgentCoreError):
    """The user's own agent or tools module failed to import or build.

    Attributes:
        target: The target as registered (`path/to/file.py:attr`, `package.module:attr`, or
            a tools module), so the user knows which entry to fix.
        traceback: The formatted traceback of the user's own code, with the loader's frames
            trimmed ("" when the problem is not an exception in their code, say a factory
            that returned the wrong type).
    """

    def __init__(self, message: str, *, target: str, traceback: str = "") -> None:
        super().__init__(message)
        self.target = target
        self.traceback = traceback
