"""The app's words for the runtime's errors: sentences a person can act on, safe to show.

The runtime speaks to Python users ("call finalize_response(), or undo_step() to go back").
The app says the same thing in its own words: it names the button or page that fixes the
problem (Finalize, Undo, Run step, Save, Settings, New task), calls steps by number ("step 3")
or short name ("the add call"), and never shows a Python method name or a raw id.

Every sentence is built from the error as data (`AgentCoreError.to_data`): its stable `code`,
its `params`, `remedy`, `task_id` and `step_id`, never from its wording. A code the app has no
words for shows the error's own message with the advice its `remedy` names. Whatever comes out
may quote model or tool text, so it is shown through `plain`, which makes any text inert in
Streamlit markdown.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_core.errors import AgentCoreError
from agent_core.llms.base import Usage
from agent_core.llms.catalog import PROVIDERS
from agent_core.types import StepKind, TaskState, TaskStep

__all__ = [
    "ADVICE",
    "ServerKey",
    "cost_text",
    "describe",
    "describe_data",
    "failed_step_text",
    "note_text",
    "plain",
    "plural",
    "replaces_message",
    "step_name",
    "token_count",
    "tokens_text",
    "unplain",
]

# --- small words ----------------------------------------------------------------------------


def plural(n: int, word: str, plural_word: str | None = None) -> str:
    """`n` and `word`, in the number that agrees: "1 step", "2 steps", "0 steps"."""
    if n == 1:
        return f"1 {word}"
    return f"{n:,} {plural_word or word + 's'}"


_NOTES = {
    "no_tool_call": (
        "The model did not call a tool: it was offered tools and answered in prose. A local "
        "server may ignore tools unless asked, or the model cannot call them: check the "
        "server, or Undo and steer the model to use a tool."
    ),
}


def note_text(code: str, message: str) -> str:
    """A step note (`StepNote`) in the app's words, from its code; its own words otherwise."""
    return _NOTES.get(code, message)


ESTIMATED = "≈"
"""Before a token count Stepwise estimated because the server sent none."""


def token_count(usage: Usage) -> str:
    """The total tokens as a number, "≈1,204" when the server sent no counts (an estimate)."""
    return f"{ESTIMATED if usage.estimated else ''}{usage.total_tokens:,}"


def tokens_text(usage: Usage) -> str:
    """The total tokens in words: "120 tokens", or "≈120 tokens" when they are an estimate."""
    words = plural(usage.total_tokens, "token")
    return f"{ESTIMATED}{words}" if usage.estimated else words


def cost_text(usd: float | None) -> str:
    """A cost as the app writes it everywhere: "$0.0012", "$0", or "cost unknown"."""
    if usd is None:
        return "cost unknown"
    return "$0" if usd == 0 else f"${usd:.4f}"


def _and(items: Sequence[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _first_upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def _sentence(text: str) -> str:
    """`text` with a capital first letter and a full stop (unless it already ends in one)."""
    text = text.strip().rstrip(";,:").strip()
    if not text:
        return ""
    return _first_upper(text) + ("" if text.endswith((".", "!", "?", ".)")) else ".")


# --- text that stays text -------------------------------------------------------------------

_PUNCTUATION = frozenset(string.punctuation)


def plain(text: str) -> str:
    """`text` as Streamlit markdown that shows exactly these characters, and nothing else.

    Every ASCII punctuation character is backslash-escaped (CommonMark allows escaping any of
    them), so no emphasis, link, image, HTML tag, code span, heading, list, `$math$`,
    `:emoji:` or `:red[colour]` directive can start. Line breaks stay line breaks and leading
    spaces stay spaces (as no-break spaces, so indentation never makes a code block).
    """
    escaped = "".join("\\" + char if char in _PUNCTUATION else char for char in text)
    lines = escaped.replace("\r\n", "\n").split("\n")
    return "  \n".join(_keep_indent(line) for line in lines)


def _keep_indent(line: str) -> str:
    body = line.lstrip(" \t")
    indent = line[: len(line) - len(body)]
    return "\u00a0" * len(indent.expandtabs(4)) + body


def unplain(markdown: str) -> str:
    """The text `plain` was given (for tests, and anything reading a box back)."""
    text = markdown.replace("  \n", "\n")
    out: list[str] = []
    escaped = False
    for char in text:
        if escaped or char != "\\":
            out.append(char)
            escaped = False
        else:
            escaped = True
    if escaped:
        out.append("\\")
    return "".join(out).replace("\u00a0", " ")


# --- naming steps ---------------------------------------------------------------------------

_KIND_NAMES = {
    StepKind.LLM: "reasoning step",
    StepKind.PLAN: "plan step",
    StepKind.FINALIZE: "answer step",
    StepKind.HUMAN: "step waiting for you",
    StepKind.CUSTOM: "step",
}


def _short_name(step: TaskStep) -> str:
    """A step's name by what it does: "add call", "plan step", "step for the coder"."""
    payload = step.input if isinstance(step.input, dict) else {}
    if step.kind is StepKind.TOOL:
        tool = payload.get("tool")
        return f"{tool} call" if isinstance(tool, str) and tool else "tool call"
    if step.kind is StepKind.DELEGATE:
        agent = payload.get("agent") or step.step_state.get("agent")
        named = isinstance(agent, str) and agent
        return f"step for the {agent} agent" if named else "sub-agent step"
    return _KIND_NAMES.get(step.kind, "step")


def step_name(step_id: str, task_state: TaskState | None = None) -> str:
    """How a message names a step: "step 3" once it has a number, else "the add call".

    An upcoming step has no number yet, so it is named by what it does; when two upcoming
    steps would share that name, its place in the queue tells them apart ("the add call
    (upcoming #2)"). A step the state does not know is "step" and the last 8 digits of its id.
    """
    step = task_state.steps.get(step_id) if task_state is not None else None
    if step is None or task_state is None:
        return f"step {step_id[-8:]}"
    if step.number is not None:
        return f"step {step.number}"
    name = _short_name(step)
    queue = task_state.step_queue
    twins = [s.step_id for s in queue if _short_name(s) == name]
    if len(twins) > 1 and step_id in twins:
        return f"the {name} (upcoming #{[s.step_id for s in queue].index(step_id) + 1})"
    return f"the {name}"


def _names(step_ids: Iterable[str], task_state: TaskState | None) -> str:
    """Several steps in one phrase: "steps 1 and 2", "the add call and step 4"."""
    ids = list(step_ids)
    steps = [task_state.steps.get(s) for s in ids] if task_state is not None else []
    numbers = [s.number for s in steps if s is not None and s.number is not None]
    if ids and len(numbers) == len(ids):
        return "steps " + _and([str(number) for number in numbers])
    return _and([step_name(step_id, task_state) for step_id in ids])


# --- advice ---------------------------------------------------------------------------------

ADVICE: dict[str, str] = {
    "finalize": "Press Finalize to finish the task, or Undo to go back.",
    "undo": "Press Undo to go back.",
    "edit_step": "Nothing completed was lost: edit the step's input and press Run step again, "
    "or Undo.",
    "run_first": "Run the upcoming steps first (Run step, Run until or Run ready steps).",
    "wait": "Wait for it to finish, then try again.",
    "configure_model": "Choose the model and add its key on the Settings page.",
    "new_task": "Start a New task to go on (this one stays here to inspect).",
    "shorten": "Shorten it, or put large material in a file a tool can read.",
    "retry": "Press Run step to try again.",
    "reload_code": "Fix it if it needs it, press Reload my code on the New task form, then "
    "Run step again. Nothing completed was lost.",
    "raise_limits": "Raise the task's bound with the Limits button above the steps, then press "
    "Run step again (or Undo and steer it). Nothing completed was lost.",
}
"""What to do, by the runtime's `remedy`, naming the button or page that does it."""

_KEY_ADVICE = {
    "openai": (
        "Add an OpenAI key on the Settings page (or set OPENAI_API_KEY before `make run`). "
        "For a local OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio), pick it "
        "on the Settings page instead."
    ),
    "anthropic": (
        "Add an Anthropic key on the Settings page (or set ANTHROPIC_API_KEY before `make run`)."
    ),
}

_STATUS_ADVICE = {
    401: "Check the key on the Settings page, then press Run step again.",
    403: "Check on the Settings page that your key may use this model.",
    404: "Check the model name on the Settings page (a local server must have the model loaded).",
    429: "Wait a moment, then press Run step again.",
}

_SERVER_ADVICE = (
    "Check the model and the server's address on the Settings page (and that the server is "
    "running), then press Run step again."
)

_CHANGED = (
    "This task changed in another tab (or another process) since this page showed it, so "
    "nothing was done. The page now shows it as it is: check it, then try again."
)

_WHY_NOT_ACTIVE = {
    "abandoned": "was abandoned",
    "completed": "is finished (finalized)",
    "imported": "is an imported copy, read only",
}


# --- errors as data -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Error:
    """An error as the app reads it: the fields of `AgentCoreError.to_data`, and the page."""

    code: str
    message: str
    remedy: str | None = None
    task_id: str = ""
    step_id: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    task_state: TaskState | None = None

    def param(self, name: str, kind: type | tuple[type, ...] = object) -> Any:
        """The param `name` when it is of `kind`, else None (data from older rows may lack it)."""
        value = self.params.get(name)
        return value if isinstance(value, kind) and not isinstance(value, bool) else None

    def advice(self, default: str | None = None) -> str:
        """What its `remedy` says to do (or `default`'s advice), "" when neither names any."""
        remedy = self.remedy if self.remedy in ADVICE else default
        return ADVICE[remedy] if remedy is not None else ""

    def who(self) -> str:
        """Its step's name, capitalised ("Step 3", "The add call")."""
        return _first_upper(step_name(self.step_id, self.task_state))


def _said(error: _Error) -> str:
    """The error's own message as a sentence, and the advice its remedy names."""
    return " ".join(part for part in (_sentence(error.message), error.advice()) if part)


def _key_missing(error: _Error) -> str:
    provider = error.param("provider", str) or ""
    if provider in _KEY_ADVICE:
        label = PROVIDERS[provider].label
        return f"No {label} key is set. {_KEY_ADVICE[provider]}"
    if provider in PROVIDERS:
        found = PROVIDERS[provider]
        env = f" (or set {found.key_env} before `make run`)" if found.key_env else ""
        return f"No {found.label} key is set. Add one on the Settings page{env}."
    return f"{_sentence(error.message)} {ADVICE['configure_model']}"


def _model_failed(error: _Error, what: str) -> str:
    """`what` went wrong calling the model, with the provider's status and request id."""
    status, request_id = error.param("status", int), error.param("request_id", str)
    details = [f"status {status}"] * (status is not None)
    details += [f"request id {request_id}"] * bool(request_id)
    out = _sentence(what)
    if details:  # Inside the sentence: "... (status 429, request id req_1)."
        out = out.removesuffix(".") + f" ({', '.join(details)})."
    if status in _STATUS_ADVICE:
        advice = _STATUS_ADVICE[status]
    elif error.remedy == "configure_model":  # No answer from the server: its address?
        advice = _SERVER_ADVICE
    else:
        advice = ADVICE["retry"]
    return f"{out} {advice}"


def _not_ready(error: _Error) -> str:
    waiting = error.param("waiting_on", list)
    if not waiting or not error.step_id:
        return (
            "No upcoming step of this task is ready: each waits for steps that have not "
            f"completed yet. {ADVICE['run_first']}"
        )
    return (
        f"{error.who()} waits for {_names(waiting, error.task_state)} to finish. Run those "
        "first (Run step on each, or Run ready steps)."
    )


def _not_runnable(error: _Error) -> str:
    status = error.param("status", str) or "not upcoming"
    action = error.param("action", str) or "run"
    said = f"{error.who()} is {status}; only upcoming or failed steps can {_verb(action)}."
    return f"{said} {error.advice()}".strip()


def _verb(action: str) -> str:
    """`action` after "can": "run", or "be edited" for the past participles the runner uses."""
    return f"be {action}" if action.endswith("ed") else action


def _running(error: _Error) -> str:
    if error.step_id:
        return f"{error.who()} is already running. {ADVICE['wait']}"
    return f"A step of this task is already running. {ADVICE['wait']}"


def _not_active(error: _Error) -> str:
    status = error.param("status", str) or ""
    why = _WHY_NOT_ACTIVE.get(status, f"is {status}" if status else "cannot go on")
    action = error.param("action", str) or "run"
    return f"This task {why}, so it cannot {action}. {ADVICE['new_task']}"


def _undo_refused(error: _Error) -> str:
    completed, requested = error.param("completed", int), error.param("requested", int)
    if not completed or requested is None:
        return "This task has no completed step to undo yet."
    return f"This task has {plural(completed, 'completed step')}, so {requested} cannot be undone."


def _too_large(error: _Error) -> str:
    what, size = error.param("what", str), error.param("size", int)
    limit = error.param("limit", int)
    if what is None or size is None or limit is None:
        return _said(error)
    said = f"{_first_upper(what)} is {size:,} characters; the limit is {limit:,}."
    return f"{said} {error.advice('shorten')}"


def _finished(error: _Error) -> str:
    at = error.param("finished_at", int)
    where = f"; it finished at step {at}" if at is not None else ""
    return f"This task has no upcoming step{where}. {ADVICE['finalize']}"


def _feedback_too_late(error: _Error) -> str:
    at = error.param("finished_at", int)
    where = f" at step {at}" if at is not None else ""
    return (
        f"This task already finished{where}, so no step would read the feedback. Press Undo "
        "first, then add the feedback before the last step runs again."
    )


def _not_finished(error: _Error) -> str:
    upcoming = error.param("upcoming", int)
    left = f" ({upcoming} upcoming)" if upcoming is not None else ""
    return (
        f"This task has not reached its last step{left}. Run it further with Run step or "
        "Run until, then press Finalize."
    )


def _tools(error: _Error) -> str:
    """The tool names an error's `tools` param lists, quoted ("a tool" without it)."""
    names = [f"'{name}'" for name in error.param("tools", list) or [] if isinstance(name, str)]
    return _and(names) if names else "a tool"


def _step_not_found(error: _Error) -> str:
    name = step_name(error.step_id, error.task_state) if error.step_id else "that step"
    return (
        f"This task has no {name} (it may have changed in another tab). The page now shows "
        "the task as it is."
    )


_BY_CODE: dict[str, Callable[[_Error], str]] = {
    "task_not_found": lambda _: (
        "This task is not in the database any more (it may have been deleted in another "
        "tab). Pick one on the Tasks page, or start a New task."
    ),
    "step_not_found": _step_not_found,
    "task_not_active": _not_active,
    "nothing_to_run": lambda e: f"This task has no upcoming step. {e.advice('new_task')}",
    "task_finished": _finished,
    "task_not_finished": _not_finished,
    "no_completed_step": lambda _: "This task has no completed step yet.",
    "nothing_to_undo": _undo_refused,
    "feedback_after_finish": _feedback_too_late,
    "step_not_ready": _not_ready,
    "step_not_runnable": _not_runnable,
    "step_running": _running,
    "task_changed": lambda _: _CHANGED,
    "input_too_large": _too_large,
    "model_not_configured": _key_missing,
    "model_error": lambda e: _model_failed(e, e.message),
    "step_action_unsupported": lambda e: (
        f"Not for this step: {_sentence(e.param('reason', str) or 'its agent cannot do that')} "
        "Undo goes back to the step before it, where you can steer."
    ),
    "mcp_server_failed": lambda e: (
        f"{_sentence(_first_upper(_mcp_server(e)))} Fix its command or URL if it needs it, "
        "then press Reload my code on the New task form."
    ),
    "user_code_error": lambda e: (
        f"{_sentence(e.message)} Fix your code, then press Reload my code on the New task form."
    ),
    "agent_not_rebuildable": lambda e: (
        f"This task's agent (a {e.param('agent', str) or 'Python'} object) lives in the program "
        f"that started it ({e.param('program', str) or 'your program'}), so the app cannot run "
        "its next step. Run that program again to carry the task on (Session.resume with this "
        "task's id), or start the app with --agent NAME=FILE:FUNCTION naming a function that "
        "builds that agent and press Fork with an agent on a completed step."
    ),
    # Threads, forks and conversation edits (issue 22).
    "thread_not_finished": lambda e: (
        f"Only a finished task's conversation can be continued, and that task is "
        f"{e.param('status', str) or 'not finished'}. Open it, run it to its answer and "
        "press Finalize, then Continue this conversation."
    ),
    "fork_point_not_completed": lambda _: (
        "A fork starts from a completed step, and that step is not one (it may have been "
        "undone in another tab). Press Fork from here on a card under Completed steps."
    ),
    "fork_of_imported": lambda _: (
        "This imported task can be forked only with an agent you choose, and only if its "
        "recorded steps wrote no files (undoing them would touch another machine's folders). "
        "Press Fork with an agent on a card, or start a New task to run the agent again."
    ),
    "fork_tool_missing": lambda e: (
        f"The agent you chose has no tool named {_tools(e)}, which the recording called: its "
        "model would call a tool it lacks. Press Fork with an agent and pick one that has it, "
        "or give it the tool (pick it under Tools in Settings, or load your tools with "
        "stepwise ui --tools NAME=MODULE and press Reload my code on the New task form)."
    ),
    "fork_calls_unanswered": lambda e: (
        f"A fork cannot start here: this model step's tool calls ({_tools(e)}) have no "
        "results yet, and no model accepts that. Press Fork with an agent on the card of the "
        "tool step after it."
    ),
    "conversation_not_editable": lambda e: (
        "This agent's framework keeps its conversation itself"
        + (f" ({e.param('reason', str)})" if e.param("reason", str) else "")
        + ", so Stepwise cannot continue or edit it. Add feedback to steer it instead, "
        "or start a New task."
    ),
    "edit_after_finish": lambda e: (
        "This task already finished"
        + (f" at step {e.param('finished_at', int)}" if e.param("finished_at", int) else "")
        + ", so no step would read the edited conversation. Press Undo first, then edit "
        "it before the last step runs again."
    ),
    "conversation_unchanged": lambda _: (
        "The edit changed nothing: change a message's text, tick Drop on one, or add a "
        "message in Edit the conversation, then press Save as a step."
    ),
    "invalid_conversation": lambda e: (
        f"{_sentence(e.message)} In Edit the conversation, keep each tool call together "
        "with its result (drop both or neither)."
    ),
}
"""The app's sentence for an error, by its code; a code not here shows its own message."""


# --- why a step failed ----------------------------------------------------------------------


def _mcp_server(error: _Error) -> str:
    server = error.param("server", str) or "?"
    detail = error.param("detail", str) or "stopped"
    return f"the MCP server {server} {detail}"


_CAUSES: dict[str, Callable[[_Error], str]] = {
    "mcp_server_failed": _mcp_server,
    "mcp_call_timeout": lambda e: (
        f"the MCP server {e.param('server', str) or '?'} did not answer in time; it is still "
        "running. Press Run step to try again, or Reload my code if it hangs"
    ),
    "max_iterations": lambda e: (
        # A framework counts its own bound (`unit`: "model request", "turn").
        f"the agent took its limit of "
        f"{plural(e.param('limit', int) or 0, e.param('unit', str) or 'reasoning step')} "
        "without an answer"
    ),
    "limit_reached": lambda e: _spent(e),
    "script_exhausted": lambda _: (
        "the demo model has run out of scripted replies: it only plays its script. Undo to go "
        "back, or start a New task with another model"
    ),
    "human_reply_needed": lambda _: (
        "you are the model here: type the model's reply in the box, then press Run step"
    ),
}
"""What went wrong inside a failed step, by the code of its cause (no capital, no stop)."""


_BOUNDS = {"max_tokens": "tokens", "max_cost_usd": "dollars", "max_iterations": "reasoning steps"}


def _spent(error: _Error) -> str:
    """What bound a task spent: "has spent 1,204 tokens of its bound of 1,000" (no stop)."""
    which = error.param("limit_name", str) or ""
    limit, used = error.param("limit", (int, float)), error.param("used", (int, float))
    if which == "max_cost_usd" and limit is not None and used is not None:
        return f"has spent ${used:,.4f} of its bound of ${limit:,.2f}"
    if which in _BOUNDS and limit is not None and used is not None:
        return f"has spent {used:,} {_BOUNDS[which]} of its bound of {limit:,}"
    return "has reached one of its bounds (reasoning steps, tokens or dollars)"


def _cause(failure: _Error) -> _Error:
    """The error that failed the step, from the failure's `cause_*` params."""
    return _Error(
        code=failure.param("cause_code", str) or "",
        message=failure.param("cause_message", str) or failure.message,
        remedy=failure.remedy,
        task_id=failure.task_id,
        step_id=failure.step_id,
        params=failure.param("cause_params", dict) or {},
        task_state=failure.task_state,
    )


def _step_failed(failure: _Error) -> str:
    """The sentence for a failed step ("Step 3 failed: why. What to do."), by its cause."""
    if not failure.step_id:
        return _said(failure)
    cause = _cause(failure)
    who = step_name(failure.step_id, failure.task_state)
    if cause.code == "step_stopped":
        return f"You stopped {who}. Edit its input and press Run step to run it again, or Undo."
    if cause.code == "model_not_configured":
        return f"{_first_upper(who)} could not call the model. {_key_missing(cause)}"
    if cause.code == "task_changed":
        return _CHANGED
    if cause.code in _RAISE_LIMITS:
        who = _number_it_takes(failure) or who
    words = _CAUSES.get(cause.code)
    said = words(cause) if words is not None else cause.message.strip().rstrip(";,:")
    failed = _sentence(f"{who} failed: {said}")
    if cause.code == "model_error" and failure.remedy in (None, "retry", "configure_model"):
        return _model_failed(cause, failed)  # Run it again (or fix the key), not edit it.
    return f"{failed} {failure.advice('edit_step')}"


def _number_it_takes(failure: _Error) -> str | None:
    """The number a failed step of a one-step-at-a-time agent takes when it runs ("step 11").

    A step is numbered when it completes; a reasoning step stopped by a bound is the only
    upcoming step of its (ReAct or function-calling) task, so it is the next number.
    """
    state = failure.task_state
    if state is None or failure.step_id not in state.steps or len(state.queue) != 1:
        return None
    number = state.steps[failure.step_id].number
    return f"step {number if number is not None else len(state.completed) + 1}"


def _limit_reached(error: _Error) -> str:
    return f"{_sentence('this task ' + _spent(error))} {ADVICE['raise_limits']}"


# --- cases and replay (issue 29) ---------------------------------------------------------------

_RESAVE = "open its task on the Stepper and press Save as test to write the case again"


def _case_file(error: _Error) -> str:
    file = error.param("file", str) or "a case file"
    where = f" (at {error.param('field', str)})" if error.param("field", str) else ""
    detail = error.param("detail", str) or error.message
    return (
        f"The case file {file} cannot be read{where}: {_sentence(detail)} Fix the file, or "
        f"{_RESAVE}; the Tests page reads it again on the next run."
    )


def _case_format(error: _Error) -> str:
    file = error.param("file", str) or "a case file"
    found = error.param("format", str) or "?"
    supported = ", ".join(str(f) for f in error.param("supported", list) or []) or "?"
    return (
        f"The case file {file} has the format {found}, which this Stepwise does not read (it "
        f"reads {supported}). Upgrade Stepwise, or {_RESAVE}."
    )


def _case_field(error: _Error) -> str:
    file = error.param("file", str) or "a case file"
    field_name = error.param("field", str) or "a field"
    return f"The case file {file} lacks the field {field_name}. Add it, or {_RESAVE}."


def _replay_unsupported(error: _Error) -> str:
    reason = error.param("reason", str) or error.message
    if reason == "no agent recorded":
        return (
            "This case records no agent (its task ran on a runner built without a spec), so "
            "the app cannot rebuild it. Replay it with `stepwise test --agent NAME=TARGET`."
        )
    return (
        f"This case cannot be replayed from its recording: {_sentence(reason)} Build the agent "
        "in a factory that takes Stepwise's model (def build_agent(llm): ...), press Reload "
        "my code on the New task form, then press Replay on current code (or Run on the "
        "Tests page) again."
    )


_BY_CODE["case_malformed"] = _case_file
_BY_CODE["case_format_unknown"] = _case_format
_BY_CODE["case_field_missing"] = _case_field
_BY_CODE["replay_unsupported"] = _replay_unsupported
_BY_CODE["replay_diverged"] = lambda e: (
    f"The replay differed from its recording at step {e.param('step', int) or '?'}: your code "
    "now asks or does something else there. Press Open the replayed task in the Stepper to "
    "see it; if the new behaviour is right, press Save as test on that task to keep it."
)
_BY_CODE["case_check_failed"] = lambda e: (
    f"The case's Python check {e.param('check', str) or ''} could not run: "
    f"{_sentence(e.param('detail', str) or e.message)} Fix it in your code, press Reload my "
    "code on the New task form, then press Run on the Tests page again."
)


_BY_CODE["step_failed"] = _step_failed
_BY_CODE["limit_reached"] = _limit_reached
_BY_CODE["conflict"] = lambda e: _step_failed(e) if e.param("cause_code", str) else _said(e)


# --- the entry points -----------------------------------------------------------------------


def describe_data(data: Mapping[str, Any], task_state: TaskState | None = None) -> str:
    """What went wrong and what to do, in the app's words, for an error given as data.

    Args:
        data: The error as `AgentCoreError.to_data` gives it (a stored one may lack fields).
        task_state: The task as the page showed it, to call steps by number or name.
    """
    params = data.get("params")
    error = _Error(
        code=str(data.get("code") or ""),
        message=str(data.get("message") or ""),
        remedy=data.get("remedy") if isinstance(data.get("remedy"), str) else None,
        task_id=str(data.get("task_id") or ""),
        step_id=str(data.get("step_id") or ""),
        params=params if isinstance(params, Mapping) else {},
        task_state=task_state,
    )
    words = _BY_CODE.get(error.code, _said)
    return words(error)


def describe(exc: BaseException, task_state: TaskState | None = None) -> str:
    """What went wrong and what to do, in the app's words, for any error an action raised.

    Args:
        exc: The error (an `AgentCoreError` says what happened; anything else is a bug, and
            the sentence says so without a traceback).
        task_state: The task as the page showed it, to call steps by number or name.
    """
    if not isinstance(exc, AgentCoreError):
        return (
            f"Something went wrong ({type(exc).__name__}: {exc}). The server's log has the details."
        )
    return describe_data(exc.to_data(), task_state)


_RAISE_LIMITS = frozenset({"max_iterations", "limit_reached"})
"""Failures a person fixes with the Limits button: the runtime's message names its API."""


@dataclass(frozen=True)
class ServerKey:
    """The server a task's model runs on, and whether this session has a key for it.

    A 401 from such a server is fixed with that server's key in Settings, not OPENAI_API_KEY.
    """

    address: str
    has_key: bool


def _server_refused(server: ServerKey) -> str:
    where = f"The server at {server.address}"
    if server.has_key:
        return (
            f"This step failed: {where} refused the request's key (status 401). If you "
            "entered the server's key after this step ran, press Run step again; else check "
            "it under API keys on the Settings page."
        )
    return (
        f"This step failed: {where} asks for a key (status 401), and this browser session has "
        "none for it. A key typed in Settings lasts one session, so a reload drops it: enter "
        "the server's key under API keys on the Settings page, then press Run step again."
    )


def _is_server_401(step: TaskStep, server: ServerKey | None) -> bool:
    return (
        server is not None
        and step.error_code == "model_error"
        and step.error_params.get("status") == 401
    )


def replaces_message(step: TaskStep, server: ServerKey | None = None) -> bool:
    """Whether the app's words for `step`'s failure say all its stored message says.

    Such a message, written for Python users (`set_limits(...)`, "check OPENAI_API_KEY"),
    is not shown beside the app's sentence.
    """
    return step.error_code in _RAISE_LIMITS or _is_server_401(step, server)


def failed_step_text(
    step: TaskStep, task_state: TaskState | None = None, *, server: ServerKey | None = None
) -> str:
    """Why a stored step failed and what to do, from the code it was recorded with.

    A step stored before errors carried codes has none: the sentence is then the general
    advice, and the page shows the stored message beside it as it is. `server` is the
    server the task's model runs on, when it is not a provider's API.
    """
    if _is_server_401(step, server):
        assert server is not None
        return _server_refused(server)
    if not step.error_code:
        return "This step failed. Edit its input and run it again, or undo."
    cause = _Error(
        code=step.error_code,
        message=step.error or "",
        task_id=step.task_id,
        step_id=step.step_id,
        params=step.error_params,
        task_state=task_state,
    )
    if step.error_code == "step_stopped":
        return "You stopped this step. Edit its input and press Run step to run it again, or Undo."
    if step.error_code == "model_not_configured":
        return f"This step could not call the model. {_key_missing(cause)}"
    words = _CAUSES.get(step.error_code)
    if step.error_code == "mcp_server_failed":
        return f"This step failed: {_mcp_server(cause)}. {ADVICE['reload_code']}"
    if step.error_code in _RAISE_LIMITS:
        said = words(cause) if words is not None else "it reached a bound of the task"
        return f"This step failed: {said}. {ADVICE['raise_limits']}"
    if words is not None:
        return f"This step failed: {words(cause)}."
    if step.error_code == "model_error":
        return _model_failed(cause, "This step failed: the model call did not work")
    if step.error_params.get("traceback"):  # Raised in the user's code or its framework.
        return (
            "This step failed in your code or its framework (the traceback says where). Fix "
            "the code, press Reload my code, then Run step again; or edit its input, or undo."
        )
    return "This step failed. Edit its input and run it again, or undo."
