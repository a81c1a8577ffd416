"""Every error the runtime raises, in one shallow tree under `AgentCoreError`.

An error carries structure rather than prose, so each face of the runtime can speak its own
language: `message` says what happened, `hint` what to do in the Python API's words, and
`remedy` names the fix in a word a user interface maps to its own button or page. `str(exc)`
is the message and the hint, for Python users.
"""

from __future__ import annotations

from typing import Literal, TypedDict, Unpack

__all__ = [
    "AgentCoreError",
    "ConflictError",
    "ErrorFields",
    "InputTooLargeError",
    "LLMConnectionError",
    "LLMError",
    "LLMStatusError",
    "LLMTimeoutError",
    "MissingKeyError",
    "NotReadyError",
    "NothingToRunError",
    "Remedy",
    "StepConflictError",
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

Remedy = Literal[
    "finalize",  # the task reached its last step: finish it
    "undo",  # go back a step
    "edit_step",  # change the step's input (or the call) and run it again
    "run_first",  # run the steps this one waits for
    "wait",  # something is running; try again when it ends
    "configure_model",  # a key, model name or server address is missing or wrong
    "new_task",  # this task cannot go on; start another
    "shorten",  # an input is over a size limit
    "retry",  # a passing problem (timeout, rate limit): run the step again
]


class ErrorFields(TypedDict, total=False):
    """The structured fields every runtime error takes (see `AgentCoreError`)."""

    hint: str
    remedy: Remedy | None
    task_id: str
    step_id: str


class AgentCoreError(Exception):
    """Base of every error the runtime raises.

    Attributes:
        message: What happened, without advice.
        hint: What to do next, in the Python API's words ("" when there is nothing to add).
        remedy: The fix in one word (see `Remedy`), for interfaces that name their own
            button or page; None when no single action fixes it.
        task_id: The task concerned ("" when none).
        step_id: The step concerned ("" when none).
    """

    def __init__(
        self,
        message: str = "",
        *,
        hint: str = "",
        remedy: Remedy | None = None,
        task_id: str = "",
        step_id: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.remedy: Remedy | None = remedy
        self.task_id = task_id
        self.step_id = step_id

    def __str__(self) -> str:  # Also keeps KeyError subclasses from quoting the message.
        return f"{self.message}; {self.hint}" if self.hint else self.message


class UserError(AgentCoreError):
    """The runtime was asked for something it cannot do as asked; the message says what to do."""


class TaskNotFoundError(UserError, KeyError):
    """No task with this id exists in the runner or its store."""


class StepNotFoundError(UserError, KeyError):
    """No step with this id exists in the task."""


class TaskNotActiveError(UserError):
    """The task is completed, abandoned, failed or imported read only, so it cannot run."""


class NothingToRunError(UserError):
    """The task has no upcoming step (or nothing to undo, or no last step to finalize)."""


class NotReadyError(UserError):
    """The chosen step waits on steps that have not completed yet.

    Attributes:
        waiting_on: The ids of the steps it waits for.
    """

    def __init__(
        self, message: str = "", *, waiting_on: list[str] | None = None, **kw: Unpack[ErrorFields]
    ) -> None:
        kw.setdefault("remedy", "run_first")
        super().__init__(message, **kw)
        self.waiting_on = list(waiting_on or [])


class InputTooLargeError(UserError):
    """A task input, step input or feedback text is over the runner's size limit."""


class ConflictError(UserError):
    """Another runner (another tab or process) changed or is running the same task."""


class StepError(AgentCoreError):
    """A step failed; it is recorded as `failed` and can be edited and retried.

    Attributes:
        cause: What went wrong inside the step (the model's, tool's or worker's error text),
            without the "step ... failed" framing.
    """

    def __init__(self, message: str = "", *, cause: str = "", **kw: Unpack[ErrorFields]) -> None:
        super().__init__(message, **kw)
        self.cause = cause or message


class StepConflictError(StepError, ConflictError):
    """A step ran, but another runner changed its task meanwhile, so its result was refused.

    Both a `StepError` (the step is recorded as failed and can run again) and a
    `ConflictError` (the clash between runners that the caller may want to tell apart).
    """


class WorkerStateError(StepError):
    """A worker left state in the task that cannot be stored as JSON."""


class ToolError(AgentCoreError):
    """A tool call failed: bad arguments, or the tool itself raised."""

    def __init__(
        self, message: str = "", *, tool_name: str = "", **kw: Unpack[ErrorFields]
    ) -> None:
        super().__init__(message, **kw)
        self.tool_name = tool_name


class LLMError(AgentCoreError):
    """A model call failed; `status` and `retry_after` come from the provider when known.

    `timed_out` marks a call that got no answer in time (no status); such calls are retried.
    `retryable` overrides the rule by status (a 429 for an exhausted quota is not worth
    repeating). `request_id` is the provider's id of the failed request, for its support.
    The subclasses say which kind of failure it was; catch `LLMError` for all of them.
    """

    def __init__(
        self,
        message: str = "",
        *,
        status: int | None = None,
        retry_after: float | None = None,
        timed_out: bool = False,
        retryable: bool | None = None,
        request_id: str | None = None,
        **kw: Unpack[ErrorFields],
    ) -> None:
        super().__init__(message, **kw)
        self.status = status
        self.retry_after = retry_after
        self.timed_out = timed_out
        self.retryable = retryable
        self.request_id = request_id


class LLMTimeoutError(LLMError):
    """The model did not answer in time."""

    def __init__(self, message: str = "", **kw: Unpack[ErrorFields]) -> None:
        kw.setdefault("remedy", "retry")
        super().__init__(message, timed_out=True, **kw)


class LLMConnectionError(LLMError):
    """The model's server could not be reached."""

    def __init__(self, message: str = "", **kw: Unpack[ErrorFields]) -> None:
        kw.setdefault("remedy", "configure_model")
        super().__init__(message, **kw)


class LLMStatusError(LLMError):
    """The model's server answered with an HTTP error status (`status`)."""


class MissingKeyError(LLMError, UserError):
    """A provider needs an API key and none was given or found in the environment."""

    def __init__(self, message: str = "", **kw: Unpack[ErrorFields]) -> None:
        kw.setdefault("remedy", "configure_model")
        super().__init__(message, **kw)


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

    def __init__(
        self, message: str = "", *, target: str = "", traceback: str = "", **kw: Unpack[ErrorFields]
    ) -> None:
        super().__init__(message, **kw)
        self.target = target
        self.traceback = traceback
