"""Messages a person can act on: the runtime's errors in the app's words, shown safely.

`describe` is checked against errors the runtime really raises (run from a scripted agent),
so a change of wording in the runtime that the app no longer maps shows up here. The notice
flow (`attempt`, `show_notice`) is driven through small AppTest scripts.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from agent_core.errors import (
    AgentCoreError,
    ConflictError,
    LLMStatusError,
    LLMTimeoutError,
    StepError,
)
from agent_core.llms import FunctionLLM, ScriptedLLM
from agent_core.llms.base import ChatMessage, ChatResponse, ToolCall
from agent_core.runtime.parallel import ParallelAgentRunner
from agent_core.runtime.runner import AgentRunner
from agent_core.spec import AgentSpec
from agent_core.tools.arithmetic import arithmetic_tools
from agent_core.types import TaskState
from agent_core.workers import FunctionCallingAgentWorker, ReActAgentWorker
from components.messages import cost_text, describe, humanize, plain, plural, step_name, unplain

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
    assert "status 429" in text and "request id req_abc123" in text
    assert "Run step" in text
    timeout = describe(LLMTimeoutError("OpenAI did not answer within 30s (model 'gpt-4o')"))
    assert "Run step" in timeout


def test_a_changed_task_says_so_in_the_apps_words() -> None:
    error = ConflictError("task 1234abcd was changed by another runner (version 3, expected 2)")
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


def test_any_raw_id_left_becomes_a_step_number_or_eight_digits() -> None:
    state, done = _one_step_state()
    upcoming = state.queue[0]
    stranger = "f" * 32
    text = humanize(
        f"step {done} ran; {upcoming} waits; task {state.task_id} and {stranger}", state
    )
    assert text == "step 1 ran; the add call waits; this task and ffffffff"
    assert step_name(upcoming, state) == "the add call"


@pytest.mark.parametrize(
    ("runtime", "app"),
    [
        ("call finalize_response(), or undo_step() to go back", "Finalize"),
        ("run it further (run_step or run_until) before finalize_response()", "Run step"),
        ("undo_step() first and give it before the last step runs again", "Undo first"),
        ("the limit is 10 (the limit is AgentRunner(max_input_chars=...))", "the limit is 10"),
        ("set the OPENAI_API_KEY environment variable or pass api_key=...", "Settings page"),
    ],
)
def test_todays_python_phrasing_is_rewritten(runtime: str, app: str) -> None:
    text = humanize(runtime)
    assert app in text
    assert_app_words(text)


def test_structured_fields_are_used_when_the_error_has_them() -> None:
    error = AgentCoreError("the task has no upcoming step", hint="call x()", remedy="finalize")
    assert describe(error) == (
        "The task has no upcoming step. Press Finalize to finish the task, or Undo to go back."
    )


# ----------------------------------------------------------------------------- on the page


def _notice_page() -> None:
    import streamlit as st

    from agent_core.errors import StepError
    from components.actions import attempt, show_notice

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
