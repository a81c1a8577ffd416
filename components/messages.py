"""The app's words for the runtime's errors: sentences a person can act on, safe to show.

The runtime speaks to Python users ("call finalize_response(), or undo_step() to go back",
"step 01a2074e… waits for steps …"). The app says the same thing in its own words: it names the
button or page that fixes the problem (Finalize, Undo, Run step, Save, Settings, New task),
calls steps by number ("step 3") or short name ("the add call"), and never shows a Python
method name or a raw id.

`describe` reads the structured fields of an `AgentCoreError` when it has them (`message`,
`remedy`, `step_id`, `waiting_on`, `cause`, an LLM error's `status` and `request_id`) and
otherwise rewrites the runtime's prose (`humanize`). Whatever it returns may quote model or
tool text, so it is shown through `plain`, which makes any text inert in Streamlit markdown.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Sequence

from agent_core.errors import (
    AgentCoreError,
    ConflictError,
    InputTooLargeError,
    LLMError,
    NotReadyError,
    StepError,
    TaskNotActiveError,
    TaskNotFoundError,
)
from agent_core.types import StepKind, TaskState, TaskStep

try:  # The runtime's model-error kinds (older runtimes raise plain `LLMError`).
    from agent_core.errors import LLMConnectionError as _CONNECTION
except ImportError:  # pragma: no cover
    _CONNECTION = LLMError

__all__ = [
    "ADVICE",
    "cost_text",
    "describe",
    "humanize",
    "plain",
    "plural",
    "step_name",
    "unplain",
]

# --- small words ----------------------------------------------------------------------------


def plural(n: int, word: str, plural_word: str | None = None) -> str:
    """`n` and `word`, in the number that agrees: "1 step", "2 steps", "0 steps"."""
    if n == 1:
        return f"1 {word}"
    return f"{n:,} {plural_word or word + 's'}"


def cost_text(usd: float | None) -> str:
    """A cost as the app writes it everywhere: "$0.0012", or "cost unknown" with no price."""
    return "cost unknown" if usd is None else f"${usd:.4f}"


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
_LEADING_SPACE = re.compile(r"^[ \t]+", re.MULTILINE)


def plain(text: str) -> str:
    """`text` as Streamlit markdown that shows exactly these characters, and nothing else.

    Every ASCII punctuation character is backslash-escaped (CommonMark allows escaping any of
    them), so no emphasis, link, image, HTML tag, code span, heading, list, `$math$`,
    `:emoji:` or `:red[colour]` directive can start. Line breaks stay line breaks and leading
    spaces stay spaces (as no-break spaces, so indentation never makes a code block).
    """
    escaped = "".join("\\" + char if char in _PUNCTUATION else char for char in text)
    escaped = _LEADING_SPACE.sub(
        lambda m: "\u00a0" * len(m.group().expandtabs(4)), escaped.replace("\r\n", "\n")
    )
    return escaped.replace("\n", "  \n")


_ESCAPED = re.compile(r"\\([" + re.escape(string.punctuation) + r"])")


def unplain(markdown: str) -> str:
    """The text `plain` was given (for tests, and anything reading a box back)."""
    return _ESCAPED.sub(r"\1", markdown.replace("  \n", "\n")).replace("\u00a0", " ")


# --- naming steps ---------------------------------------------------------------------------

_HEX_ID = r"[0-9a-f]{32}"
_SHORT_ID = r"[0-9a-f]{8}"
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
    names = [step_name(step_id, task_state) for step_id in step_ids]
    if names and all(re.fullmatch(r"step \d+", name) for name in names):
        return "steps " + _and([name.removeprefix("step ") for name in names])
    return _and(names)


# --- the runtime's prose, in the app's words ------------------------------------------------

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
}
"""What to do, by the runtime's `remedy`, naming the button or page that does it."""

# Phrases of today's runtime messages, rewritten in order. Each names what the app offers.
_PHRASES: list[tuple[str, str | Callable[[re.Match[str]], str]]] = [
    # No key.
    (
        r"OpenAILLM has no API key[:;] set the OPENAI_API_KEY environment variable or pass "
        r"api_key=\.\.\.(?:;[^\n]*?base_url=\"?ollama\"?)?",
        "No OpenAI key is set. " + _KEY_ADVICE["openai"],
    ),
    (
        r"AnthropicLLM has no API key[:;] set the ANTHROPIC_API_KEY environment variable or pass "
        r"api_key=\.\.\.(?: \(in the app: enter the key in Settings\))?",
        "No Anthropic key is set. " + _KEY_ADVICE["anthropic"],
    ),
    (
        r"check OPENAI_API_KEY or the key in Settings",
        "check the OpenAI key on the Settings page",
    ),
    (r"check the key \(OPENAI_API_KEY\)", "check the OpenAI key on the Settings page"),
    (
        r"set a valid key \(ANTHROPIC_API_KEY\)",
        "set a valid Anthropic key on the Settings page",
    ),
    (r" ?\(in the app: [^)]*\)", ""),
    (
        r"(?:set the \w+ environment variable or )?pass api_key=\.\.\.",
        "add a key on the Settings page",
    ),
    (r"pass base_url=\.\.\.", "pick the server on the Settings page"),
    # Steps that fail.
    (
        r"[.;] [Nn]othing completed was lost; edit the step's input and run it again, or "
        r"undo_step\(\)",
        "",
    ),
    (r"Edit the step's input and run it again", "Edit the step's input, then press Run step"),
    (
        r"the agent reached max_iterations=(\d+) without an answer; undo and steer it with a "
        r"new input, or build the worker with a higher max_iterations",
        r"the agent took its limit of \1 reasoning steps without an answer. Undo and steer it "
        r"with feedback or a new input",
    ),
    (
        r"ScriptedLLM '[^']*' has no reply left: all (\d+) scripted replies were used\. Add "
        r"replies \(add_replies\) or check why the agent asked the model again\.?",
        "the demo model has run out of scripted replies: it only plays its script. Undo to go "
        "back, or start a New task with another model",
    ),
    (
        r"the model here is you: type the model's reply for this step, then run it",
        "you are the model here: type the model's reply in the box, then press Run step",
    ),
    # Models that do not answer.
    (
        r"; retry the step, or use a larger timeout for slow models",
        ". Press Run step to try again (a slow model may need a longer timeout)",
    ),
    (
        r"; run the step again, or build AnthropicLLM with a larger timeout= \(or a lower "
        r"max_tokens=\) for long replies",
        ". Press Run step to try again",
    ),
    (r"; retry the step, or check the server's logs", ". Press Run step to try again"),
    (r"retry the step", "press Run step to try again"),
    (r"run the step again", "press Run step again"),
    # Finishing, undoing, feedback.
    (
        r"run it further \(run_step or run_until\) before finalize_response\(\)",
        "run it further with Run step or Run until, then press Finalize",
    ),
    (
        r"undo_step\(\) first and give it before the last step runs again",
        "press Undo first, then add the feedback before the last step runs again",
    ),
    (r"\(undo_step makes a completed one upcoming again\)", "(Undo makes it upcoming again)"),
    (r"has 0 completed steps?(?:\(s\))?; cannot undo \d+", "has no completed step to undo yet"),
    (
        r"has (\d+) completed step\(s\); cannot undo (\d+)",
        lambda m: f"has {plural(int(m[1]), 'completed step')}, so {m[2]} cannot be undone",
    ),
    (r"has no completed step yet; run_step\(\) runs one", "has no completed step yet"),
    (r"(?:call )?finalize_response\(\)", "Finalize"),
    (r"(?:call )?undo_step\(\)", "Undo"),
    (r"run_step\(\)", "Run step"),
    (r"run_until\(\)", "Run until"),
    # Sizes and stores.
    (r" \(the limit is AgentRunner\(max_input_chars=\.\.\.\)\)", ""),
    (
        r"list_tasks\(\) shows the tasks there, create_task\(\) makes a new one",
        "the Tasks page lists the tasks there; New task starts one",
    ),
    (r" \(as_new=True\)", ""),
    (r"; reload it and try again", "; the page now shows it as it is: check it and try again"),
    (r"create a new task to (?:continue|go on)", "start a New task to go on"),
    (r"wait for it to finish", "wait for it to finish, then try again"),
]
_COMPILED = [(re.compile(pattern), replacement) for pattern, replacement in _PHRASES]

_ID_LIST = re.compile(rf"\bsteps ((?:'?{_HEX_ID}'?)(?:(?:, | and )'?{_HEX_ID}'?)*)")
_STEP_ID = re.compile(rf"\bstep '?({_HEX_ID})'?")
_TASK_ID = re.compile(rf"\btask '?({_HEX_ID}|{_SHORT_ID})'?")
_BARE_ID = re.compile(rf"'?\b({_HEX_ID})\b'?")
_STEP_OF_TASK = re.compile(rf"\bstep '?({_HEX_ID})'? of (?:this task|task '?{_SHORT_ID}'?)")


def _replace_ids(text: str, task_state: TaskState | None, this_task: str | None) -> str:
    """Step ids become step names, the shown task becomes "this task", other ids 8 digits."""
    this_task = task_state.task_id if task_state is not None else this_task

    def task(match: re.Match[str]) -> str:
        found = match.group(1)
        if this_task is not None and this_task.endswith(found):
            return "this task"
        return f"task {found[-8:]}"

    def bare(match: re.Match[str]) -> str:
        found = match.group(1)
        if found == this_task:
            return "this task"
        if task_state is not None and found in task_state.steps:
            return step_name(found, task_state)
        return found[-8:]

    text = _STEP_OF_TASK.sub(lambda m: step_name(m.group(1), task_state), text)
    text = _ID_LIST.sub(lambda m: _names(re.findall(_HEX_ID, m.group(1)), task_state), text)
    text = _TASK_ID.sub(task, text)
    text = _STEP_ID.sub(lambda m: step_name(m.group(1), task_state), text)
    text = _BARE_ID.sub(bare, text)
    # "the the add call", "step the add call": a name replaced an id after its own article.
    return re.sub(r"\b(?:the|step) (the )", r"\1", text)


def humanize(text: str, task_state: TaskState | None = None, *, task_id: str = "") -> str:
    """The runtime's prose in the app's words: buttons for methods, step names for ids.

    Args:
        text: The runtime's message (or any text quoting it).
        task_state: The task the page shows: its steps are named by number or short name.
        task_id: Without `task_state`, the task the page shows (it is "this task").
    """
    for pattern, replacement in _COMPILED:
        text = pattern.sub(replacement, text)
    return _replace_ids(text, task_state, task_id or None)


# --- errors ---------------------------------------------------------------------------------


def _fields(exc: BaseException) -> tuple[str, str, str | None]:
    """The error's `message`, `hint` and `remedy`, or today's prose with no remedy."""
    message = getattr(exc, "message", None)
    if not isinstance(message, str):
        return str(exc), "", None
    hint = getattr(exc, "hint", "")
    remedy = getattr(exc, "remedy", None)
    return message, hint if isinstance(hint, str) else "", remedy if remedy in ADVICE else None


def _task_of(exc: BaseException) -> str:
    task_id = getattr(exc, "task_id", "")
    return task_id if isinstance(task_id, str) else ""


def _llm_error(exc: BaseException) -> LLMError | None:
    """The model error behind `exc` (itself, or what a failed step wraps)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, LLMError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


_NO_KEY = re.compile(r"\bno (?:API )?key\b|\bapi_key=", re.IGNORECASE)


def _missing_key(exc: BaseException, text: str) -> str | None:
    """The key sentence, for a model that could not be built or called for want of a key."""
    if not _NO_KEY.search(text):
        return None
    if "ANTHROPIC_API_KEY" in text or "AnthropicLLM" in text:
        return "No Anthropic key is set. " + _KEY_ADVICE["anthropic"]
    if "OPENAI_API_KEY" in text or "OpenAILLM" in text:
        return "No OpenAI key is set. " + _KEY_ADVICE["openai"]
    if getattr(exc, "remedy", None) == "configure_model":
        provider = "anthropic" if "anthropic" in text.lower() else "openai"
        title = "Anthropic" if provider == "anthropic" else "OpenAI"
        return f"No {title} key is set. " + _KEY_ADVICE[provider]
    return None


_STATUS_ADVICE = {
    401: "Check the key on the Settings page, then press Run step again.",
    403: "Check on the Settings page that your key may use this model.",
    404: "Check the model name on the Settings page (a local server must have the model loaded).",
    429: "Wait a moment, then press Run step again.",
}


def _llm_sentence(llm: LLMError, text: str) -> str:
    """Advice for a model call that failed, with the provider's status and request id."""
    status = getattr(llm, "status", None)
    request_id = getattr(llm, "request_id", None)
    details = []
    if isinstance(status, int) and str(status) not in text:
        details.append(f"status {status}")
    if isinstance(request_id, str) and request_id and request_id not in text:
        details.append(f"request id {request_id}")
    out = _sentence(text) + (f" ({', '.join(details)})" if details else "")
    if isinstance(status, int) and status in _STATUS_ADVICE:
        advice = _STATUS_ADVICE[status]
    elif getattr(llm, "remedy", None) == "configure_model" or isinstance(llm, _CONNECTION):
        advice = (
            "Check the model and the server's address on the Settings page (and that the "
            "server is running), then press Run step again."
        )
    else:
        advice = ADVICE["retry"]
    return f"{out} {advice}"


def _not_ready(exc: NotReadyError, task_state: TaskState | None) -> str | None:
    waiting = getattr(exc, "waiting_on", None)
    step_id = getattr(exc, "step_id", "")
    if not waiting or not step_id:
        return None
    who = _first_upper(step_name(step_id, task_state))
    return (
        f"{who} waits for {_names(waiting, task_state)} to finish. Run those first (Run step "
        "on each, or Run ready steps)."
    )


def _step_failed(exc: StepError, task_state: TaskState | None) -> str | None:
    cause = getattr(exc, "cause", None)
    step_id = getattr(exc, "step_id", "")
    if not isinstance(cause, str) or not cause or not step_id or cause == str(exc):
        return None
    who = step_name(step_id, task_state)
    if cause.strip() == "stopped by you":
        return f"You stopped {who}. Edit its input and press Run step to run it again, or Undo."
    if key := _missing_key(exc, cause):
        return f"{_first_upper(who)} could not call the model. {key}"
    said = humanize(cause, task_state, task_id=_task_of(exc)).strip().rstrip(";,:")
    failed = _first_upper(f"{who} failed: {said}") + ("" if said.endswith(".") else ".")
    remedy = getattr(exc, "remedy", None)
    llm = _llm_error(exc)
    if llm is not None and remedy in (None, "retry", "configure_model"):
        return _llm_sentence(llm, failed)  # Run it again (or fix the key), not edit it.
    return f"{failed} {ADVICE[remedy if remedy in ADVICE else 'edit_step']}"


def _conflict(text: str) -> str | None:
    if "changed by another runner" in text or "changed in another" in text:
        return (
            "This task changed in another tab (or another process) since this page showed it, "
            "so nothing was done. The page now shows it as it is: check it, then try again."
        )
    return None


def _unknown_task(exc: AgentCoreError) -> str:
    return (
        "This task is not in the database any more (it may have been deleted in another tab). "
        "Pick one on the Tasks page, or start a New task."
    )


def _described_by_type(exc: AgentCoreError, task_state: TaskState | None) -> str | None:
    """The special cases: sentences built from the error's fields, not from its prose."""
    text = str(exc)
    if key := _missing_key(exc, text):
        return key
    if isinstance(exc, TaskNotFoundError):
        return _unknown_task(exc)
    if isinstance(exc, ConflictError) and (sentence := _conflict(text)):
        return sentence
    if isinstance(exc, NotReadyError) and (sentence := _not_ready(exc, task_state)):
        return sentence
    if isinstance(exc, StepError) and (sentence := _step_failed(exc, task_state)):
        return sentence
    return None


_REMEDY_OF: list[tuple[type[AgentCoreError], str]] = [
    (InputTooLargeError, "shorten"),
    (TaskNotActiveError, "new_task"),
]
"""Today's errors carry no `remedy`; these types say which advice their prose already holds."""


def describe(exc: BaseException, task_state: TaskState | None = None) -> str:
    """What went wrong and what to do, in the app's words, for any error an action raised.

    Args:
        exc: The error (an `AgentCoreError` says what happened; anything else is a bug, and
            the sentence says so without a traceback).
        task_state: The task as the page showed it, to call steps by number or name.
    """
    if not isinstance(exc, AgentCoreError):
        detail = humanize(f"{type(exc).__name__}: {exc}", task_state)
        return f"Something went wrong ({detail}). The server's log has the details."
    if special := _described_by_type(exc, task_state):
        return special
    message, hint, remedy = _fields(exc)
    if (llm := _llm_error(exc)) is not None and not isinstance(exc, StepError):
        return _llm_sentence(llm, humanize(message, task_state, task_id=_task_of(exc)))
    if remedy is not None:
        text = (
            _sentence(humanize(message, task_state, task_id=_task_of(exc))) + " " + ADVICE[remedy]
        )
    else:
        text = humanize(message + (f"; {hint}" if hint else ""), task_state, task_id=_task_of(exc))
        text = " ".join(_sentence(part) for part in _split_sentences(text))
        if _needs_step_advice(exc, message):
            text += " " + ADVICE["edit_step"]
    return text


def _split_sentences(text: str) -> list[str]:
    # "X; do Y" reads as two sentences once the advice names a button.
    return [part for part in re.split(r"(?<=[a-z)'])\. (?=[A-Z])", text) if part.strip()]


def _needs_step_advice(exc: AgentCoreError, message: str) -> bool:
    """A failed step whose prose (today's) held the advice that `humanize` took off."""
    return isinstance(exc, StepError) and "othing completed was lost" in message
