"""Step cards and the memory view tell the truth: rejections, numbers, code, counts, messages.

Cards are drawn from real runs of the demo agents where a run can make the step, and from
hand-built outputs for what a run cannot make today (a whole float, a call rejected by an
older runtime). `AppTest.from_function` draws them on their own page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from agent_core.demos import SCENARIOS
from agent_core.llms.base import ChatMessage, Usage
from agent_core.runtime.runner import AgentRunner
from agent_core.types import StepKind, StepStatus, TaskStep, TaskStepOutput, ToolOutput
from stepwise.app.components.step_card import card_title

RUN_PYTHON_CODE = 'import pathlib\nprint("hi")\npathlib.Path("a.txt").write_text("x")\n'
HAIKU = "Soft wool on the wind\nhigh above the quiet clouds\na llama hums home"


def _demo(name: str, tmp_path: Path, **update: Any) -> tuple[AgentRunner, str]:
    scenario = SCENARIOS[name]
    spec = scenario.spec.model_copy(update={"workspace": str(tmp_path), **update})
    runner = spec.build_runner()
    return runner, runner.create_task(scenario.task).task_id


def _output(kind: StepKind = StepKind.LLM, **fields: Any) -> TaskStepOutput:
    step_fields = {
        key: fields.pop(key)
        for key in ("input", "status", "edited", "proposed_input", "number")
        if key in fields
    }
    step = TaskStep(task_id="t", kind=kind, number=step_fields.pop("number", 2), **step_fields)
    if "status" not in step_fields:
        step.status = StepStatus.COMPLETED
    return TaskStepOutput(task_step=step, **fields)


def _draw(outputs: list[TaskStepOutput]) -> AppTest:
    """A page drawing each output's card (expanded), then the page run."""

    def page(dumped: list[str]) -> None:
        from agent_core.types import TaskStepOutput
        from stepwise.app.components.step_card import render_step_card

        for text in dumped:
            render_step_card(TaskStepOutput.model_validate_json(text), expanded=True)

    app = AppTest.from_function(page, args=([o.model_dump_json() for o in outputs],))
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def _codes(app: AppTest) -> list[tuple[str, str | None]]:
    """Each code block's text and language (None for plain text)."""
    return [(c.value, None if c.language == "plaintext" else c.language) for c in app.code]


# ------------------------------------------------------------------------------- titles


def test_a_rejected_call_says_rejected_with_the_reason_never_edited(tmp_path: Path) -> None:
    runner, task_id = _demo("arithmetic", tmp_path, tool_approval=True)
    runner.run_step(task_id)
    rejected = runner.reject_step(task_id, message="use add instead")

    title = card_title(rejected)
    app = _draw([rejected])

    assert title.startswith("Step 2 · tool · multiply · rejected: ")
    assert 'use add instead"' in title
    assert "edited" not in title
    codes = [value for value, _ in _codes(app)]
    assert "use add instead" in codes
    assert 'multiply({"a": 121, "b": 3})' in codes  # The call it proposed, without a key.
    assert not any('"rejected"' in value for value in codes)
    assert "What ran (edited by you)" not in [c.value for c in app.caption]


def test_a_call_rejected_by_an_older_runtime_reads_the_same() -> None:
    call = {"tool": "add", "args": {"a": 1, "b": 2}}
    legacy = _output(
        StepKind.TOOL,
        input={**call, "rejected": "**no** [click](http://x)"},
        proposed_input=call,
        edited=True,
        output="The user rejected the call of add: no",
        tool_calls=[
            ToolOutput(tool_name="add", args=call["args"], content="rejected", is_error=True)
        ],
    )

    title = card_title(legacy)

    assert "edited" not in title
    assert "rejected: " in title
    # The reason is the person's text: its markdown is escaped, so it shows as typed.
    assert r"\*\*no\*\* \[click\]\(http\:" in title


def test_counts_agree_and_cost_has_one_wording() -> None:
    one = _output(usage=Usage(prompt_tokens=1, completion_tokens=0))
    priced = _output(usage=Usage(prompt_tokens=100, completion_tokens=20, cost_usd=0.0012))
    tool = _output(StepKind.TOOL, input={"tool": "add", "args": {}}, latency_ms=3)

    assert "· 1 token · cost unknown ·" in card_title(one)
    assert "· 120 tokens · $0.0012 ·" in card_title(priced)
    assert card_title(tool) == "Step 2 · tool · add · 3 ms"  # No model ran: no tokens, no cost.


def test_an_undone_last_step_is_not_called_the_last_step() -> None:
    answer = _output(is_last=True, output="405")
    undone = _output(is_last=True, output="405", status=StepStatus.UNDONE)

    assert card_title(answer).endswith("last step")
    assert "last step" not in card_title(undone)
    assert "undone" in card_title(undone)


def test_a_skipped_step_says_it_did_not_run() -> None:
    skipped = _output(
        StepKind.TOOL, input={"tool": "add", "args": {"a": 1}}, status=StepStatus.SKIPPED, number=3
    )

    app = _draw([skipped])

    assert card_title(skipped) == "Step 3 · tool · add · skipped"
    assert any("did not run" in c.value for c in app.caption)


def test_an_undone_skip_says_so_not_that_a_run_was_undone(tmp_path: Path) -> None:
    runner, task_id = _demo("arithmetic", tmp_path)
    (upcoming,) = runner.get_upcoming_steps(task_id)
    runner.skip_step(task_id, upcoming.step_id)
    runner.undo_step(task_id)

    skipped = runner.get_step_output(task_id, upcoming.step_id)

    assert skipped is not None and skipped.task_step.status is StepStatus.UNDONE
    assert card_title(skipped) == "Step 1 · llm · skip undone"


# ------------------------------------------------------------------------------- bodies


def test_arguments_and_results_show_the_numbers_the_model_wrote(tmp_path: Path) -> None:
    runner, task_id = _demo("arithmetic", tmp_path)
    first = runner.run_step(task_id)
    whole_float = _output(
        output="Thought: x",
        tool_calls=[ToolOutput(tool_name="multiply", args={"a": 121.0, "b": 3}, content="363.0")],
    )

    codes = [value for value, _ in _codes(_draw([first, whole_float]))]

    assert codes.count('multiply({"a": 121, "b": 3})') == 2
    assert codes.count("363") == 2
    assert not any("121.0" in value or "363.0" in value for value in codes)


def test_code_and_file_contents_are_shown_as_code_blocks() -> None:
    python = _output(
        StepKind.TOOL,
        input={"tool": "run_python", "args": {"code": RUN_PYTHON_CODE}},
        tool_calls=[
            ToolOutput(tool_name="run_python", args={"code": RUN_PYTHON_CODE}, content="hi")
        ],
        output="hi",
    )
    write = _output(
        output="Saved.",
        tool_calls=[
            ToolOutput(
                tool_name="write_file",
                args={"path": "haiku.txt", "content": HAIKU},
                content="wrote 67 characters to haiku.txt",
            ),
            ToolOutput(
                tool_name="write_file",
                args={"path": "page.html", "content": "<h1>x</h1>\n<p>y</p>"},
                content="ok",
            ),
        ],
    )

    codes = _codes(_draw([python, write]))

    assert (RUN_PYTHON_CODE.rstrip(), "python") in codes
    assert ('run_python({"code": …})', None) in codes
    assert (HAIKU, None) in codes
    assert ("<h1>x</h1>\n<p>y</p>", "html") in codes
    assert ('write_file({"path": "haiku.txt", "content": …})', None) in codes
    assert not any("\\n" in value for value, _ in codes)  # No JSON-escaped line breaks.


def test_the_messages_a_step_sent_are_one_toggle_away() -> None:
    sent = [
        ChatMessage(role="system", content="You are a careful agent."),
        ChatMessage(role="user", content="What is (121 * 3) + 42?"),
    ]
    output = _output(output="405", messages_sent=sent)
    app = _draw([output, _output(output="no model call")])

    first, _ = app.toggle
    assert first.label == "Messages sent to the model"
    assert "You are a careful agent." not in [c.value for c in app.code]  # Read when opened.
    first.set_value(True).run()

    codes = [c.value for c in app.code]
    assert codes == ["405", "You are a careful agent.", "What is (121 * 3) + 42?", "no model call"]
    assert "2 messages" in [c.value for c in app.caption]
    app.toggle[1].set_value(True).run()  # Nothing stored for it, and nothing to load it with.
    assert "This step sent nothing to a model." in [c.value for c in app.caption]


# ----------------------------------------------------------------------------- memory view


def _memory_page(messages: list[ChatMessage], *, twice: bool = False) -> AppTest:
    def page(dumped: list[str], twice: bool) -> None:
        from agent_core.llms.base import ChatMessage
        from stepwise.app.components.memory_view import render_memory

        messages = [ChatMessage.model_validate_json(text) for text in dumped]
        render_memory(messages)
        if twice:
            render_memory(messages, limit=None)

    app = AppTest.from_function(page, args=([m.model_dump_json() for m in messages], twice))
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


@pytest.fixture
def long_history() -> list[ChatMessage]:
    system = ChatMessage(role="system", content="Rules. " * 600)  # 4,200 characters.
    turns = [
        ChatMessage(role="user" if n % 2 else "assistant", content=f"message {n}")
        for n in range(1, 46)
    ]
    return [system, *turns]


def test_a_long_history_is_paged_with_the_system_prompt_in_full(long_history) -> None:
    app = _memory_page(long_history)

    codes = [c.value for c in app.code]
    assert codes[0] == long_history[0].content  # Not cut, and above every page.
    assert codes[1:] == [f"message {n}" for n in range(41, 46)]  # The newest page first.
    (picker,) = app.selectbox
    assert picker.options == [
        "Page 1 of 3 (messages 1 to 20)",
        "Page 2 of 3 (messages 21 to 40)",
        "Page 3 of 3 (messages 41 to 45)",
    ]

    picker.set_value(0).run()

    codes = [c.value for c in app.code]
    assert codes[0] == long_history[0].content
    assert codes[1:] == [f"message {n}" for n in range(1, 21)]


def test_the_same_long_history_can_be_shown_twice_on_a_page(long_history) -> None:
    app = _memory_page(long_history, twice=True)

    assert len(app.selectbox) == 2
