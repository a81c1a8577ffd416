"""Every error the runtime raises, in one shallow tree under `AgentCoreError`.

An error carries structure rather than prose, so each face of the runtime can speak its own
language: `code` says which error it is in a stable word (`ERROR_CODES` lists them) and
`params` holds its facts as JSON (a limit, a provider, a count); `message` says what happened,
`hint` what to do in the Python API's words, and `remedy` names the fix in a word a user
interface maps to its own button or page. `str(exc)` is the message and the hint, for Python
users. The HTTP faces answer with the code; the app words each code its own way. Never match
a message's text: its wording may change, the code does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypedDict, Unpack

__all__ = [
    "ERROR_CODES",
    "AgentCoreError",
    "ConflictError",
    "ErrorFields",
    "InputTooLargeError",
    "InvalidTextError",
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
    "StoreUnavailableError",
    "SubscriberLimitError",
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
    "reload_code",  # the user's code or an MCP server needs reloading (fix it if needed first)
    "raise_limits",  # the task reached a bound of its run (steps, tokens, cost): raise it
]


ERROR_CODES: Mapping[str, str] = {
    # A class's own code (its `default_code`); the HTTP faces have answered with these since
    # before errors carried a code, so they never change.
    "error": "something in the runtime failed (the base class); as a step's cause, an exception "
    "that is not the runtime's (`exception`: its type; `traceback`: where, when the user's code "
    "or a framework raised it)",
    "bad_request": "the runtime was asked for something it cannot do as asked",
    "task_not_found": "no task with this id (`task_id`) exists",
    "step_not_found": "the task has no step with this id (`step_id`)",
    "task_not_active": "the task is finished, abandoned or an imported copy (`status`), so it "
    "cannot `action`",
    "nothing_to_run": "the task has no upcoming step, and no last step to finalize",
    "step_not_ready": "the step waits for steps that have not completed (`waiting_on`)",
    "input_too_large": "an input (`what`) is `size` characters, over the `limit`",
    "invalid_text": "an input (`what`) holds a lone surrogate (`position`), which is no "
    "character and cannot be stored or sent",
    "conflict": "another runner (a tab, a process) holds or changed the task",
    "step_failed": "a step failed; `cause_code`, `cause_params` and `cause_message` say why "
    "(the code, params and message of what failed it)",
    "tool_error": "a tool call failed (`tool`)",
    "model_error": "a model call failed (`status`, `request_id`, `retry_after`, `timed_out` "
    "when known)",
    "model_not_configured": "a provider needs an API key and has none (`provider`, `key_env`)",
    "store_error": "the store could not read or write",
    "store_unavailable": "the database (`where`, without its password) does not answer: it is "
    "stopped, unreachable, or refuses the connection (`detail`: the driver's first line); "
    "nothing was read or written",
    "unsupported_store_url": "a database URL names a scheme (`scheme`) no store reads; "
    "`supported` lists those that are (a path is a SQLite file)",
    "user_code_error": "the user's own agent or tools failed to load (`target`)",
    "invalid_conversation": "the messages or tools cannot make a conversation",
    "context_too_long": "the conversation is longer than the model's context",
    # Finer codes, given where a class covers cases a person fixes differently.
    "task_finished": "the task has no upcoming step: it finished at step `finished_at`",
    "task_not_finished": "the task cannot be finalized: `upcoming` steps are still to run",
    "no_completed_step": "the task has no completed step yet, so it has no output",
    "nothing_to_undo": "`requested` steps cannot be undone: the task has `completed`",
    "feedback_after_finish": "the task finished at step `finished_at`: no step would read feedback",
    "step_not_runnable": "the step (`step_id`) is `status`: only upcoming or failed steps run",
    "step_running": "the step (or every ready step) is already running",
    "task_changed": "another runner changed the task since it was read (`version`, `expected`)",
    "step_stopped": "a person stopped the step while it ran",
    "max_iterations": "the agent took its `limit` of reasoning steps without an answer",
    "script_exhausted": "a scripted model used all its `replies` replies",
    "human_reply_needed": "the model is a person, and no reply was typed for this step",
    "missing_extra": "a feature (`feature`) needs an extra of the stepwise distribution "
    "(`extra`) whose package (`module`) is not installed",
    "model_request_refused": "the model's server failed the same request twice with a server "
    "error (`status`; `server`, and its own text in `detail`): running it again will not help",
    "model_busy": "a model call on a local server timed out after `timeout_s` s; the server may "
    "still be generating that reply, so it was not retried",
    "unsupported_tool_kind": "a framework's agent asked for a kind of tool call Stepwise cannot "
    "step (`kind`; e.g. a pydantic-ai external or CallDeferred tool)",
    "step_action_unsupported": "the agent's framework cannot `action` this step (an edit, a "
    "skip, a rejection or feedback); `reason` says why",
    "model_stream_broken": "the model's server opened a reply stream and closed it before "
    "sending anything (`server`)",
    "model_stream_cut": "the model's server ended a reply stream mid-reply, without saying "
    "why the reply ended (no finish reason): the reply (`chars` characters so far) is "
    "incomplete, so it was not kept (`server`)",
    "model_stream_unimplemented": "a framework agent's own model (`model`) does not implement "
    "the method (`method`) Stepwise streams its replies through (the Agents SDK's "
    "`Model.stream_response`)",
    "mcp_server_failed": "an MCP server (`server`, run as or reached at `spec`) could not start "
    "or be reached, or stopped (`detail`; `stderr`: what it wrote since its last answer, when "
    "anything; `tool`: the call that did not run, as a step's cause); it stays so until the "
    "user's code is reloaded, which starts it again",
    "mcp_tools_unreadable": "an MCP server (`server`, run as or reached at `spec`) answered "
    "its handshake or tool listing in a form the MCP client could not parse (`detail` has the "
    "parser's gist, e.g. tool schemas nested too deep); it stays so until the user's code is "
    "reloaded",
    "mcp_call_timeout": "an MCP server (`server`) did not answer a call of `tool` within "
    "`timeout_s` s; it still runs, so the step can run again",
    "limit_reached": "the task spent its bound `limit_name` (`limit`; `used` so far): raise "
    "the task's limits to go on",
    "fork_point_not_completed": "a fork must start from a completed step of the task, and "
    "`step_id` is not one",
    "fork_of_imported": "an imported task cannot be forked (its file writes name another "
    "machine's folders)",
    "thread_not_finished": "a task can continue only the conversation of a finalized task, and "
    "task `task_id` is `status`",
    "edit_after_finish": "the task finished at step `finished_at`, so no step would read an "
    "edited conversation",
    "conversation_unchanged": "an edit of the conversation changed nothing",
    "conversation_not_editable": "the agent's framework keeps its conversation itself "
    "(`reason`), so Stepwise cannot continue or edit it",
    "invalid_service_name": "a service name is empty, over `limit` characters (`size`), "
    "reserved, or holds a character outside letters, digits, '_' and '-' (stepwise.services)",
    "queue_unavailable": "the services' message queue (Redis) could not be reached, so nothing "
    "was sent; a task being created is stored as failed (stepwise.services)",
    "sandbox_launcher_killed": "run_python's launcher was killed by `signal` before the code "
    "ended (most likely by the code itself); the code and every process it started were stopped",
    # Cases and replay (agent_core.recordings).
    "case_malformed": "a case file (`file`) is not JSON, or a field (`field`) holds what the "
    "format does not allow (`detail`); fix the file or save the case again",
    "case_format_unknown": "a case file (`file`) has a `format` this Stepwise does not read "
    "(`supported` lists those it does)",
    "case_field_missing": "a case file (`file`) lacks a required field (`field`)",
    "case_check_failed": "a case's Python check (`check`) could not be imported or raised "
    "(`detail`)",
    "replay_unsupported": "a case cannot be replayed as recorded (`reason`): e.g. an agent that "
    "calls its own model rather than the one Stepwise gives it",
    "replay_diverged": "a replay differed from its recording at step `step` (`kind`): the "
    "agent's code now asks or does something else there",
    # Imported runs (agent_core.recordings.importers) and forking them with an agent.
    "trace_unreadable": "a file to import (`file`) is not UTF-8 JSON or JSON lines, or is cut "
    "short (`detail`; `line` for JSON lines)",
    "trace_format_unknown": "a file to import (`file`) is none of the formats Stepwise reads "
    "(`supported`)",
    "trace_too_large": "a file to import (`file`) is over a bound: `what` is `size`, the limit "
    "`limit`",
    "trace_too_deep": "a file to import (`file`) nests deeper than `limit` levels",
    "trace_malformed": "a trace's field (`field`, in span `span` when known) holds what its "
    "format does not allow (`detail`)",
    "trace_no_model_calls": "a file to import (`file`) holds no model call Stepwise can read, so "
    "no task was made",
    "fork_tool_missing": "the agent chosen for a fork lacks tools the recording called (`tools`)",
    "fork_calls_unanswered": "a fork with another agent starts after a model step whose tool "
    "calls have no results yet (`tools`): fork from the last tool step after it",
    # The host (agent_core.host): live events and acts across processes.
    "too_many_subscribers": "this process already streams a task's events to `limit` "
    "subscribers, its bound",
    "stop_unanswered": "a stop was asked of the process running the step, and the step still ran "
    "after `wait_s` s (that process may be busy in a tool that cannot be interrupted)",
    "agent_not_rebuildable": "the task was started by a program with an agent object that no "
    "importable target names (`agent`), so no other face can rebuild it to run its next step",
    # Sampling one step N times (agent_core.runtime.sampling).
    "sample_unsupported": "the step cannot be sampled (`reason`): its request cannot be sent "
    "again without running it (a tool step, or a framework's agent that calls its own model)",
    "sample_no_model_call": "the sampled step reached its end without calling a model",
    "sample_group_unknown": "the sample has no group `group` of replies to continue with "
    "(it has `groups`; a group of failed calls cannot be continued with)",
    "sample_stale": "the task moved on since the step was sampled: the request its upcoming step "
    "would send now differs from the sampled one; sample it again",
    "sample_count_invalid": "a sample needs between 1 and `max` calls, and `n` were asked for",
    "max_tokens_invalid": "a reply cap (`where`) is `value`, not a whole number of tokens of "
    "at least 1 (stepwise serve's --max-tokens, STEPWISE_MAX_TOKENS)",
    # Runs side by side (agent_core.recordings.compare).
    "compare_runs_too_few": "a comparison needs two runs or more, and `runs` were given",
    "branch_not_found": "the task has no branch `branch_id` on which a step ran",
    # Re-running a task from one of its steps on reloaded code (agent_core.recordings.rerun).
    "rerun_step_invalid": "a re-run starts from a recorded step of the task, 1 to `steps`, and "
    "`step` is not one",
    "rerun_diverged": "the steps before `step` could not be answered from the recording on the "
    "new code (`detail`), so no re-run from `step` was made",
}
"""Every code an `AgentCoreError` carries, with what it means (its `params` in backticks).

A code is public API: the HTTP faces answer with it and the app words each one. Add codes;
never change what one means.
"""


class ErrorFields(TypedDict, total=False):
    """The structured fields every runtime error takes (see `AgentCoreError`)."""

    hint: str
    remedy: Remedy | None
    task_id: str
    step_id: str
    code: str
    params: dict[str, Any]


class AgentCoreError(Exception):
    """Base of every error the runtime raises.

    Attributes:
        default_code: The code of errors of this class raised without one (a class's code).
        code: Which error this is, in a stable word from `ERROR_CODES`: a face words its
            messages from the code, never from the text.
        params: The code's facts as JSON (a limit, a provider, a count; see `ERROR_CODES`),
            beside `task_id` and `step_id`, which have fields of their own.
        message: What happened, without advice.
        hint: What to do next, in the Python API's words ("" when there is nothing to add).
        remedy: The fix in one word (see `Remedy`), for interfaces that name their own
            button or page; None when no single action fixes it.
        task_id: The task concerned ("" when none).
        step_id: The step concerned ("" when none).
    """

    default_code: ClassVar[str] = "error"

    def __init__(
        self,
        message: str = "",
        *,
        hint: str = "",
        remedy: Remedy | None = None,
        task_id: str = "",
        step_id: str = "",
        code: str = "",
        params: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.remedy: Remedy | None = remedy
        self.task_id = task_id
        self.step_id = step_id
        self.code = code or type(self).default_code
        self.params: dict[str, Any] = dict(params or {})

    def __str__(self) -> str:  # Also keeps KeyError subclasses from quoting the message.
        return f"{self.message}; {self.hint}" if self.hint else self.message

    def to_data(self) -> dict[str, Any]:
        """The error as JSON, all a face needs to word it without the exception object.

        Returns:
            `code`, `message`, `hint`, `remedy`, `task_id`, `step_id` and `params` (a copy).
        """
        return {
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
            "remedy": self.remedy,
            "task_id": self.task_id,
            "step_id": self.step_id,
            "params": dict(self.params),
        }

    def _param(self, name: str, value: Any) -> None:
        """Record a fact a subclass takes as a keyword among `params` (unless given there)."""
        if value is not None and value != "":
            self.params.setdefault(name, value)


class UserError(AgentCoreError):
    """The runtime was asked for something it cannot do as asked; the message says what to do."""

    default_code = "bad_request"


class TaskNotFoundError(UserError, KeyError):
    """No task with this id exists in the runner or its store."""

    default_code = "task_not_found"


class StepNotFoundError(UserError, KeyError):
    """No step with this id exists in the task."""

    default_code = "step_not_found"


class TaskNotActiveError(UserError):
    """The task is completed, abandoned, failed or imported read only, so it cannot run."""

    default_code = "task_not_active"


class NothingToRunError(UserError):
    """The task has no upcoming step (or nothing to undo, or no last step to finalize)."""

    default_code = "nothing_to_run"


class NotReadyError(UserError):
    """The chosen step waits on steps that have not completed yet.

    Attributes:
        waiting_on: The ids of the steps it waits for (also `params["waiting_on"]`).
    """

    default_code = "step_not_ready"

    def __init__(
        self, message: str = "", *, waiting_on: list[str] | None = None, **kw: Unpack[ErrorFields]
    ) -> None:
        kw.setdefault("remedy", "run_first")
        super().__init__(message, **kw)
        self.waiting_on = list(waiting_on or [])
        self._param("waiting_on", self.waiting_on or None)


class InvalidTextError(UserError):
    """Text holds a lone surrogate (U+D800 to U+DFFF): no store, file or wire can encode it."""

    default_code = "invalid_text"


class InputTooLargeError(UserError):
    """A task input, step input or feedback text is over the runner's size limit."""

    default_code = "input_too_large"


class ConflictError(UserError):
    """Another runner (another tab or process) changed or is running the same task."""

    default_code = "conflict"


class StepError(AgentCoreError):
    """A step failed; it is recorded as `failed` and can be edited and retried.

    Attributes:
        cause: What went wrong inside the step (the model's, tool's or worker's error text),
            without the "step ... failed" framing. Once the runner has recorded the failure,
            `params` holds what went wrong as data: `cause_code` and `cause_params` (its code
            and params) and `cause_message` (its message, without the Python API's hint).
    """

    default_code = "step_failed"

    def __init__(self, message: str = "", *, cause: str = "", **kw: Unpack[ErrorFields]) -> None:
        super().__init__(message, **kw)
        self.cause = cause or message

    def to_data(self) -> dict[str, Any]:
        """As `AgentCoreError.to_data`, with `cause` as `params["cause_message"]` if not there."""
        data = super().to_data()
        data["params"].setdefault("cause_message", self.cause)
        return data


class StepConflictError(StepError, ConflictError):
    """A step ran, but another runner changed its task meanwhile, so its result was refused.

    Both a `StepError` (the step is recorded as failed and can run again) and a
    `ConflictError` (the clash between runners that the caller may want to tell apart).
    """

    default_code = "conflict"


class WorkerStateError(StepError):
    """A worker left state in the task that cannot be stored as JSON."""


class ToolError(AgentCoreError):
    """A tool call failed: bad arguments, or the tool itself raised."""

    default_code = "tool_error"

    def __init__(
        self, message: str = "", *, tool_name: str = "", **kw: Unpack[ErrorFields]
    ) -> None:
        super().__init__(message, **kw)
        self.tool_name = tool_name
        self._param("tool", tool_name)


class LLMError(AgentCoreError):
    """A model call failed; `status` and `retry_after` come from the provider when known.

    `timed_out` marks a call that got no answer in time (no status); such calls are retried.
    `retryable` overrides the rule by status (a 429 for an exhausted quota is not worth
    repeating). `request_id` is the provider's id of the failed request, for its support.
    The subclasses say which kind of failure it was; catch `LLMError` for all of them. Each
    of these facts that is known is also in `params`, under the same name.
    """

    default_code = "model_error"

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
        for name in ("status", "retry_after", "request_id"):
            self._param(name, getattr(self, name))
        self._param("timed_out", timed_out or None)


class LLMTimeoutError(LLMError):
    """The model did not answer in time."""

    def __init__(
        self, message: str = "", *, retryable: bool | None = None, **kw: Unpack[ErrorFields]
    ) -> None:
        kw.setdefault("remedy", "retry")
        super().__init__(message, timed_out=True, retryable=retryable, **kw)


class LLMConnectionError(LLMError):
    """The model's server could not be reached (or lost the reply while sending it)."""

    def __init__(
        self, message: str = "", *, retryable: bool | None = None, **kw: Unpack[ErrorFields]
    ) -> None:
        kw.setdefault("remedy", "configure_model")
        super().__init__(message, retryable=retryable, **kw)


class LLMStatusError(LLMError):
    """The model's server answered with an HTTP error status (`status`)."""


class MissingKeyError(LLMError, UserError):
    """A provider needs an API key and none was given or found in the environment.

    Its `params` name the `provider` (as in `agent_core.llms.catalog`) and the `key_env`
    variable that holds the key.
    """

    default_code = "model_not_configured"

    def __init__(self, message: str = "", **kw: Unpack[ErrorFields]) -> None:
        kw.setdefault("remedy", "configure_model")
        super().__init__(message, **kw)


class StoreError(AgentCoreError):
    """The store could not read or write; what was committed before is intact."""

    default_code = "store_error"


class StoreUnavailableError(StoreError):
    """The database does not answer (stopped, unreachable, refusing): start it, or use another.

    Its `params` name `where` the database is, without its password.
    """

    default_code = "store_unavailable"


class SubscriberLimitError(AgentCoreError):
    """A process streams events to as many subscribers as it may; `params["limit"]` says how many.

    Close event streams no longer read, or read the task instead of watching it.
    """

    default_code = "too_many_subscribers"


class UserCodeError(AgentCoreError):
    """The user's own agent or tools module failed to import or build.

    Attributes:
        target: The target as registered (`path/to/file.py:attr`, `package.module:attr`, or
            a tools module), so the user knows which entry to fix.
        traceback: The formatted traceback of the user's own code, with the loader's frames
            trimmed ("" when the problem is not an exception in their code, say a factory
            that returned the wrong type).
    """

    default_code = "user_code_error"

    def __init__(
        self, message: str = "", *, target: str = "", traceback: str = "", **kw: Unpack[ErrorFields]
    ) -> None:
        super().__init__(message, **kw)
        self.target = target
        self.traceback = traceback
        self._param("target", target)
