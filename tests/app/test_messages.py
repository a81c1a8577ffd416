"""Messages a person can act on: the runtime's errors in the app's words, shown safely.

`describe` is checked against errors the runtime really raises (run from a scripted agent),
so a runtime error that loses its code, or a code the app no longer words, shows up here.
The app words errors from their code and params only: a test keeps regular expressions over
the runtime's text from coming back. The notice flow (`attempt`, `show_notice`) is driven
through small AppTest scripts.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from agent_core.errors import (
    ERROR_CODES,
    AgentCoreError,
    ConflictError,
    LLMConnectionError,
    LLMStatusError,
    LLMTimeoutError,
    StepError,
)
from agent_core.llms import FunctionLLM, ScriptedLLM
from agent_core.llms.base import ChatMessage, ChatResponse, ToolCall
from agent_core.runtime.parallel import ParallelAgentRunner
from agent_core.runtime.runner import AgentRunner
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.store.base import TaskChange
from agent_core.tools.arithmetic import arithmetic_tools
from agent_core.types import StepStatus, TaskState, TaskStep
from agent_core.workers import FunctionCallingAgentWorker, ReActAgentWorker
from stepwise.app.components import messages
from stepwise.app.components.messages import (
    cost_text,
    describe,
    describe_data,
    failed_step_text,
    plain,
    plural,
    step_name,
    unplain,
)

HOSTILE = [
    "**x**",
    "[a](javascript:x)",
    "<img src=x onerror=alert(1)>",
    "$x$ and $$y$$",
    "`code` and ```fence```",
    "# heading\n- item\n1. first\n> quote\n    indented",
    ":red[colour] :material/home: :smile:",
    "a_b_c ~~strike~~ | table | \\ backslash",
]
_API_WORDS = re.compile(
    r"\w+\(\)|\w+=\.\.\.|AgentRunner|max_input_chars|api_key|base_url|"
    r"run_step|undo_step|finalize_response|create_task|list_tasks|add_feedback"
)
_HEX_ID = re.compile(r"[0-9a-f]{32}")
ADD = 'Thought: I add.\nAction: add\nAction Input: {"a": 1, "b": 2}'


def error_of(call: Callable[[], Any]) -> BaseException:
    try:
        call()
    except Exception as exc:
        return exc
    raise AssertionError("no error")


def assert_app_words(text: str) -> None:
    """No Python API name, no raw id: only what a person sees on the page."""
    assert not _API_WORDS.search(text), text
    assert not _HEX_ID.search(text), text


def react_runner(replies: list[str], *, approval: bool = True) -> AgentRunner:
    worker = ReActAgentWorker(arithmetic_tools(), ScriptedLLM(replies), tool_approval=approval)
    return AgentRunner(worker)


# ----------------------------------------------------------------------------- plain text


@pytest.mark.parametrize("text", HOSTILE)
def test_plain_escapes_every_markdown_character_and_keeps_the_text(text: str) -> None:
    shown = plain(text)
    assert unplain(shown) == text
    unescaped = re.sub(r"\\[" + re.escape(string.punctuation) + "]", "", shown)
    assert not set(unescaped) & set(string.punctuation), shown
    assert "\n    " not in shown  # indentation never makes a code block


def test_plain_keeps_line_breaks_as_breaks() -> None:
    assert plain("one\ntwo") == "one  \ntwo"


# ----------------------------------------------------------------------------- small words


def test_plural_and_cost_agree_with_their_numbers() -> None:
    assert [plural(n, "step") for n in (0, 1, 2, 1200)] == [
        "0 steps",
        "1 step",
        "2 steps",
        "1,200 steps",
    ]
    assert plural(2, "reply", "replies") == "2 replies"
    assert cost_text(None) == "cost unknown"
    assert cost_text(0.00123) == "$0.0012"
    assert cost_text(0.0) == "$0"  # A free model (the demo): no price to round.


# ----------------------------------------------------------------------------- describe


def test_finalize_too_early_names_the_buttons_that_get_there() -> None:
    runner = react_runner([ADD])
    task = runner.create_task("add")
    text = describe(error_of(lambda: runner.finalize_response(task.task_id)))
    assert_app_words(text)
    assert "this task" in text.lower() and "Run step" in text


def test_running_past_the_last_step_offers_finalize_and_undo() -> None:
    runner = react_runner(["Thought: easy.\nAnswer: 3"])
    task = runner.create_task("add")
    runner.run_step(task.task_id)
    error = error_of(lambda: runner.run_step(task.task_id))
    text = describe(error, runner.get_task_state(task.task_id))
    assert_app_words(text)
    assert "Finalize" in text and "Undo" in text and "step 1" in text


def test_feedback_after_the_last_step_says_to_undo_first() -> None:
    runner = react_runner(["Thought: easy.\nAnswer: 3"])
    task = runner.create_task("add")
    runner.run_step(task.task_id)
    text = describe(error_of(lambda: runner.add_feedback(task.task_id, "more")))
    assert_app_words(text)
    assert "Undo" in text


def test_running_a_completed_step_calls_it_by_its_number() -> None:
    runner = react_runner([ADD])
    task = runner.create_task("add")
    first = runner.run_step(task.task_id).task_step.step_id
    error = error_of(lambda: runner.run_step(task.task_id, step_id=first))
    text = describe(error, runner.get_task_state(task.task_id))
    assert_app_words(text)
    assert text.startswith("Step 1 ") and "Undo" in text


def _two_calls(messages: list[ChatMessage], tools: Any) -> ChatResponse:
    calls = (
        ToolCall(id="1", name="add", args={"a": 1, "b": 2}),
        ToolCall(id="2", name="multiply", args={"a": 2, "b": 3}),
    )
    return ChatResponse(message=ChatMessage(role="assistant", content="", tool_calls=calls))


def test_a_step_waiting_for_others_names_them_by_what_they_do() -> None:
    worker = FunctionCallingAgentWorker(arithmetic_tools(), FunctionLLM(_two_calls))
    runner = ParallelAgentRunner(worker)
    task = runner.create_task("sum and product")
    runner.run_step(task.task_id)
    state = runner.get_task_state(task.task_id)
    error = error_of(lambda: runner.run_step(task.task_id, step_id=state.queue[-1]))
    text = describe(error, state)
    assert_app_words(text)
    assert "the add call and the multiply call" in text
    assert "Run ready steps" in text


def test_a_failed_step_says_what_failed_and_how_to_retry() -> None:
    runner = react_runner([])  # The model has nothing to say: the step fails.
    task = runner.create_task("add")
    error = error_of(lambda: runner.run_step(task.task_id))
    assert isinstance(error, StepError)
    text = describe(error, runner.get_task_state(task.task_id))
    assert_app_words(text)
    assert text.startswith("The reasoning step failed:")
    assert "Run step" in text and "Undo" in text


def test_too_long_feedback_gives_the_limit_without_python_words() -> None:
    runner = AgentRunner(ReActAgentWorker([], ScriptedLLM([])), max_input_chars=10)
    task = runner.create_task("short")
    text = describe(error_of(lambda: runner.add_feedback(task.task_id, "x" * 50)))
    assert_app_words(text)
    assert "Shorten it" in text


def test_an_unknown_task_points_at_the_tasks_page() -> None:
    runner = react_runner([])
    text = describe(error_of(lambda: runner.get_task_state("0" * 32)))
    assert_app_words(text)
    assert "Tasks page" in text and "New task" in text


@pytest.mark.parametrize(
    ("provider", "sentence"),
    [
        (
            "openai",
            "Add an OpenAI key on the Settings page (or set OPENAI_API_KEY before `make run`).",
        ),
        (
            "anthropic",
            "Add an Anthropic key on the Settings page (or set ANTHROPIC_API_KEY before "
            "`make run`).",
        ),
    ],
)
def test_a_missing_key_sends_the_user_to_settings(
    provider: str, sentence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    error = error_of(lambda: AgentSpec(provider=provider).build_runner())  # type: ignore[arg-type]
    text = describe(error)
    assert_app_words(text)
    assert sentence in text


def test_a_model_error_keeps_the_request_id_and_says_to_run_again() -> None:
    error = LLMStatusError(
        "OpenAI rate-limited the call to 'gpt-4o-mini'", status=429, request_id="req_abc123"
    )
    text = describe(error)
    assert "(status 429, request id req_abc123)." in text
    assert "Run step" in text
    timeout = describe(LLMTimeoutError("OpenAI did not answer within 30s (model 'gpt-4o')"))
    assert "Run step" in timeout


def test_a_changed_task_says_so_in_the_apps_words() -> None:
    # Was a ConflictError built from the store's wording; now the store's own refusal, whose
    # code the app words (the wording alone no longer matters).
    runner = react_runner([ADD])
    task = runner.create_task("add")
    state = runner.get_task_state(task.task_id)
    stale = TaskChange(state=state, base_version=state.version + 1)
    error = error_of(lambda: runner.store.commit(stale))
    assert isinstance(error, ConflictError) and error.code == "task_changed"
    text = describe(error)
    assert "changed in another tab" in text
    assert "version" not in text


def test_a_bug_is_one_sentence_without_a_traceback() -> None:
    text = describe(ValueError("boom"))
    assert text.startswith("Something went wrong (ValueError: boom)")


def _one_step_state() -> tuple[TaskState, str]:
    runner = react_runner([ADD])
    task = runner.create_task("add")
    done = runner.run_step(task.task_id).task_step.step_id
    return runner.get_task_state(task.task_id), done


def test_steps_are_named_by_number_or_by_what_they_do_never_by_id() -> None:
    # Was a test of `humanize`, which found ids in any text by regex; ids now come from the
    # error's fields, so the names are checked where an error carries them.
    state, done = _one_step_state()
    upcoming = state.queue[0]
    assert step_name(done, state) == "step 1"
    assert step_name(upcoming, state) == "the add call"
    assert step_name("f" * 32, state) == "step ffffffff"
    data = {"code": "step_not_ready", "step_id": upcoming, "params": {"waiting_on": [done]}}
    assert describe_data(data, state).startswith("The add call waits for steps 1 to finish.")


# ----------------------------------------------------------------------------- every code

# Each code's params as the runtime gives them, and words its sentence must hold.
WORDED: dict[str, tuple[dict[str, Any], str]] = {
    "task_not_found": ({}, "Tasks page"),
    "step_not_found": ({}, "page now shows"),
    "task_not_active": ({"status": "abandoned", "action": "run"}, "was abandoned"),
    "nothing_to_run": ({}, "no upcoming step"),
    "task_finished": ({"finished_at": 4}, "finished at step 4. Press Finalize"),
    "task_not_finished": ({"upcoming": 2}, "(2 upcoming)"),
    "no_completed_step": ({}, "no completed step yet"),
    "nothing_to_undo": ({"completed": 1, "requested": 2}, "1 completed step, so 2 cannot"),
    "feedback_after_finish": ({"finished_at": 3}, "Press Undo first"),
    "step_not_ready": ({}, "Run ready steps"),
    "step_not_runnable": ({"status": "completed", "action": "edited"}, "can be edited"),
    "step_running": ({}, "already running"),
    "task_changed": ({"version": 3, "expected": 2}, "changed in another tab"),
    "input_too_large": ({"what": "the feedback", "size": 50, "limit": 10}, "limit is 10"),
    "model_not_configured": ({"provider": "anthropic"}, "Add an Anthropic key"),
    "model_error": ({"status": 404}, "Check the model name"),
    "user_code_error": ({"target": "x.py:agent"}, "Reload my code"),
    "step_failed": (
        {"cause_code": "max_iterations", "cause_params": {"limit": 4}},
        "limit of 4 reasoning steps",
    ),
    "thread_not_finished": ({"status": "active"}, "press Finalize"),
    "fork_point_not_completed": ({"step_id": "b" * 32}, "Fork from here"),
    "fork_of_imported": ({}, "New task"),
    "conversation_not_editable": ({"reason": "pydantic-ai keeps it"}, "(pydantic-ai keeps it)"),
    "edit_after_finish": ({"finished_at": 3}, "at step 3"),
    "conversation_unchanged": ({}, "Save as a step"),
    "limit_reached": (
        {"limit_name": "max_tokens", "limit": 100, "used": 120},
        "120 tokens of its bound of 100. Raise the task's bound with the Limits button",
    ),
}
"""Codes the app words itself. The rest show the error's own message and its remedy's advice."""


@pytest.mark.parametrize("code", sorted(ERROR_CODES))
def test_every_code_renders_as_a_sentence_even_without_its_params(code: str) -> None:
    # A stored row may hold a code with none of its params: still a sentence, never a crash.
    data = {"code": code, "message": "it went wrong", "step_id": "a" * 32, "remedy": "retry"}
    text = describe_data(data)
    assert text.strip() and text.rstrip().endswith("."), text
    assert_app_words(text)


@pytest.mark.parametrize("code", sorted(WORDED))
def test_each_code_the_app_words_is_worded_from_its_params(code: str) -> None:
    params, words = WORDED[code]
    data = {"code": code, "message": "RUNTIME TEXT", "step_id": "a" * 32, "params": params}
    text = describe_data(data)
    assert words in text, text
    # A model's or the user's code's own words are the right text there; elsewhere, the app's.
    assert ("RUNTIME TEXT" in text) is (code in {"model_error", "user_code_error"}), text
    assert_app_words(text)


def test_the_codes_the_app_words_are_the_runtimes() -> None:
    assert set(WORDED) <= set(ERROR_CODES)
    assert set(messages._BY_CODE) <= set(ERROR_CODES) | {"conflict"}
    assert set(messages._CAUSES) <= set(ERROR_CODES)


def test_a_code_the_app_does_not_word_shows_the_message_and_its_remedy() -> None:
    data = {"code": "a_code_from_a_newer_runtime", "message": "the thing broke", "remedy": "undo"}
    assert describe_data(data) == "The thing broke. Press Undo to go back."


def test_no_regular_expression_reads_the_runtimes_text() -> None:
    """The app words errors from their codes: matching the runtime's English must not return."""
    source = Path(messages.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    imported = {
        name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in [getattr(node, "module", None), *(a.name for a in node.names)]
        if name
    }
    assert "re" not in imported, "stepwise/app/components/messages.py imports re again"
    assert not hasattr(messages, "_PHRASES") and not hasattr(messages, "humanize")
    # Nowhere in the app's components does a regex read an error's text (message, hint, cause...).
    for path in Path(messages.__file__).parent.glob("*.py"):
        for call in _regex_calls(ast.parse(path.read_text(encoding="utf-8"))):
            read = {
                n.attr for arg in call.args for n in ast.walk(arg) if isinstance(n, ast.Attribute)
            }
            assert not read & _ERROR_TEXT, f"{path.name}:{call.lineno} matches an error's text"


_ERROR_TEXT = {"message", "hint", "cause", "error", "detail"}


def _regex_calls(tree: ast.AST) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "re"
    ]


def test_the_regex_guard_sees_a_regex_over_an_errors_message() -> None:
    # The guard above must be able to fail: here is what it looks for.
    tree = ast.parse("import re\nre.sub('x', 'y', exc.message)")
    (call,) = _regex_calls(tree)
    assert {n.attr for n in ast.walk(call.args[2]) if isinstance(n, ast.Attribute)} == {"message"}


# ----------------------------------------------------------------------------- failed steps


def test_a_failed_step_keeps_its_code_in_the_store_and_is_worded_after_a_reload(
    tmp_path: Path,
) -> None:
    path = tmp_path / "stepwise.db"
    store = SQLiteStore(path)
    runner = AgentRunner(ReActAgentWorker(arithmetic_tools(), ScriptedLLM([])), store=store)
    task = runner.create_task("add")
    error = error_of(lambda: runner.run_step(task.task_id))
    assert isinstance(error, StepError) and error.code == "step_failed"
    assert error.params["cause_code"] == "script_exhausted"
    store.close()

    reopened = SQLiteStore(path)
    try:
        reader = AgentRunner(ReActAgentWorker([], ScriptedLLM([])), store=reopened)
        state = reader.get_task_state(task.task_id)
    finally:
        reopened.close()
    (failed,) = state.step_queue
    assert failed.status is StepStatus.FAILED
    assert (failed.error_code, failed.error_params) == ("script_exhausted", {"replies": 0})
    text = failed_step_text(failed, state)
    assert text.startswith("This step failed: the demo model has run out of scripted replies")
    assert_app_words(text)


def test_a_step_stored_before_codes_shows_its_general_advice() -> None:
    old_row = '{"task_id": "t", "step_id": "s", "status": "failed", "error": "it broke"}'
    step = TaskStep.model_validate_json(old_row)
    assert step.error_code is None
    assert failed_step_text(step) == "This step failed. Edit its input and run it again, or undo."


@pytest.mark.parametrize(
    ("code", "params", "words"),
    [
        ("max_iterations", {"limit": 10}, "limit of 10 reasoning steps"),
        # Issue 32 item 2: pydantic-ai's request_limit, lifted with the Limits button.
        ("max_iterations", {"limit": 50, "unit": "model request"}, "50 model requests"),
        ("script_exhausted", {"replies": 2}, "run out of scripted replies"),
        ("human_reply_needed", {}, "you are the model here"),
        ("step_stopped", {}, "You stopped this step"),
        ("model_not_configured", {"provider": "openai"}, "Add an OpenAI key"),
        ("model_error", {"status": 429}, "Wait a moment"),
    ],
)
def test_each_cause_of_a_stored_failure_is_worded(
    code: str, params: dict[str, Any], words: str
) -> None:
    step = TaskStep(
        task_id="t", status=StepStatus.FAILED, error="raw", error_code=code, error_params=params
    )
    text = failed_step_text(step)
    assert words in text, text
    assert_app_words(text)


def test_a_server_that_cannot_be_reached_points_at_its_address() -> None:
    text = describe(LLMConnectionError("could not reach the server at http://localhost:9"))
    assert "server's address on the Settings page" in text


def test_structured_fields_are_used_when_the_error_has_them() -> None:
    error = AgentCoreError("the task has no upcoming step", hint="call x()", remedy="finalize")
    assert describe(error) == (
        "The task has no upcoming step. Press Finalize to finish the task, or Undo to go back."
    )


# ----------------------------------------------------------------------------- on the page


def _notice_page() -> None:
    import streamlit as st

    from agent_core.errors import StepError
    from stepwise.app.components.actions import attempt, show_notice

    def fail() -> None:
        cause = "the tool said <img src=x onerror=alert(1)> **bold**"
        raise StepError("step failed", cause=cause, step_id="0" * 32)

    show_notice()
    if st.button("Fails"):
        attempt(fail)
        st.rerun()
    if st.button("Works"):
        attempt(lambda: None, success="Task finished.")
        st.rerun()
    if st.button("Fails here"):
        attempt(fail, where="controls")
        st.rerun()
    st.write("controls")
    show_notice(where="controls")


def _page() -> AppTest:
    at = AppTest.from_function(_notice_page)
    at.run()
    return at


def _click(at: AppTest, label: str) -> AppTest:
    (button,) = [b for b in at.button if b.label == label]
    button.click().run()
    assert not at.exception
    return at


def test_an_error_is_inside_its_box_and_model_text_stays_text() -> None:
    at = _click(_page(), "Fails")
    (box,) = at.error
    assert "<img src=x onerror=alert(1)> **bold**" in unplain(box.value)
    assert "\\<img" in box.value and "\\*\\*bold\\*\\*" in box.value  # escaped, not markup
    assert not at.text  # no bare headline box with plain text under it


def test_success_is_a_toast() -> None:
    at = _click(_page(), "Works")
    assert [t.value for t in at.toast] == ["Task finished."]
    assert not at.success and not at.error


def test_an_error_shows_next_to_its_control_once() -> None:
    at = _click(_page(), "Fails here")
    markdown = [m.value for m in at.markdown]
    (box,) = at.error
    # Drawn after the "controls" marker, where the page asked for it, not at the top.
    assert at.main.children[len(at.main.children) - 1].value == box.value  # type: ignore[attr-defined]
    assert "controls" in markdown
    at.run()
    assert not at.error  # shown once
