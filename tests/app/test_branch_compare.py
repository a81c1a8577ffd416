"""Compare branches: which runs a task had, how their steps pair up, and what differs.

The pairing is plain functions over a `TaskState` from a real runner (a scripted ReAct agent
with tool approval, or a counting custom worker); one AppTest draws the comparison to check
that step text stays text.
"""

from __future__ import annotations

import json
from typing import Any

from streamlit.testing.v1 import AppTest

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.store import InMemoryStore
from agent_core.tools import FunctionTool
from agent_core.types import StepKind, StepStatus, TaskState
from agent_core.workers import CustomSimpleAgentWorker, ReActAgentWorker
from stepwise.app.components.branch_compare import (
    COMPARED_FIELDS,
    branch_label,
    default_pair,
    pair_steps,
    task_branches,
)
from stepwise.app.components.run_compare import default_runs

HOSTILE = "<img src=x onerror=alert(1)> **bold** [link](http://x) :red[red]"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _react(args: dict[str, Any]) -> str:
    return f"Thought: I add.\nAction: add\nAction Input: {json.dumps(args)}"


def _answer(text: str) -> str:
    return f"Thought: I know it.\nAnswer: {text}"


class Counter(CustomSimpleAgentWorker):
    """Counts its steps and never finishes."""

    def _run_step(self, state: dict[str, Any], task: Any, input: str | None) -> tuple[str, bool]:
        state["n"] = state.get("n", 0) + 1
        return f"count {state['n']}", False


def _counter() -> tuple[AgentRunner, str]:
    agent = AgentRunner(Counter(), store=InMemoryStore())
    return agent, agent.create_task("Count.").task_id


def rerun_with_an_edited_tool_call() -> TaskState:
    """LLM proposes add(1, 2), the tool runs, the LLM answers; then undo to after step 1,
    edit the call to add(1, 5), and run again: the model answers differently."""
    llm = ScriptedLLM([_react({"a": 1, "b": 2}), _answer("3"), _answer("6")])
    worker = ReActAgentWorker.from_tools(
        [FunctionTool.from_defaults(fn=add)], llm=llm, tool_approval=True
    )
    agent = AgentRunner(worker)
    task_id = agent.create_task("What is 1 + 2?").task_id
    agent.run_step(task_id)
    agent.run_step(task_id)
    agent.run_step(task_id)
    agent.undo_step(task_id, steps=2)
    (call,) = agent.get_upcoming_steps(task_id)
    agent.edit_step(task_id, call.step_id, {"tool": "add", "args": {"a": 1, "b": 5}})
    agent.run_step(task_id)
    agent.run_step(task_id)
    assert llm.exhausted
    return agent.get_task_state(task_id)


def test_the_undone_run_pairs_with_the_rerun_step_by_step_with_differences_flagged() -> None:
    state = rerun_with_an_edited_tool_call()

    branches = task_branches(state)

    assert len(branches) == 2
    first, rerun = branches
    assert (first.current, rerun.current) == (False, True)
    assert rerun.steps == tuple(state.completed)
    assert first.steps[0] == rerun.steps[0]  # Step 1 is shared.
    assert [state.steps[s].status for s in first.steps[1:]] == [StepStatus.UNDONE] * 2
    assert default_pair(branches) == (first, rerun)

    tool_row, answer_row = pair_steps(state, first, rerun)

    assert (tool_row.number, answer_row.number) == (2, 3)
    assert tool_row.old is not None and tool_row.new is not None
    assert tool_row.old.kind == tool_row.new.kind == StepKind.TOOL.value
    # As proposed, both runs had add(1, 2); as run, the new one had add(1, 5).
    assert tool_row.old.proposed == tool_row.new.proposed
    assert '"b": 2' in tool_row.old.input and '"b": 5' in tool_row.new.input
    assert {"input", "output"} <= set(tool_row.changed)
    assert "proposed" not in tool_row.changed and "kind" not in tool_row.changed
    assert (tool_row.old.output, tool_row.new.output) == ("3", "6")
    assert answer_row.old is not None and answer_row.new is not None
    assert "output" in answer_row.changed
    assert (answer_row.old.output, answer_row.new.output) == ("3", "6")
    assert "latency" not in COMPARED_FIELDS  # Latency always differs: shown, never flagged.


def test_each_undo_and_rerun_is_a_run_and_the_newest_other_run_is_compared() -> None:
    agent, task_id = _counter()
    agent.run_until(task_id, max_steps=3)
    original = list(agent.get_task_state(task_id).completed)
    agent.undo_step(task_id)
    agent.run_step(task_id)  # Run 2: steps 1, 2, then its own step 3.
    second = list(agent.get_task_state(task_id).completed)
    agent.undo_step(task_id, steps=2)
    agent.run_until(task_id, max_steps=2)  # Run 3: step 1, then its own steps 2 and 3.
    state = agent.get_task_state(task_id)

    runs = task_branches(state)

    assert [r.steps for r in runs] == [tuple(original), tuple(second), tuple(state.completed)]
    assert [r.forked_at for r in runs] == [1, 3, 2]
    assert [branch_label(r, state) for r in runs] == [
        "Run 1 (first run): 3 steps, 2 steps undone",
        "Run 2 (re-run from step 3): 3 steps, 2 steps undone",
        "Run 3 (re-run from step 2): 3 steps, current",
    ]
    old, new = default_pair(runs) or (None, None)
    assert (old, new) == (runs[1], runs[2])
    # Run 3 shares step 1 with runs 1 and 2; it was made by undoing run 2, the newer.
    assert default_runs(runs) == [runs[1], runs[2]]
    pairs = pair_steps(state, runs[1], runs[2])
    assert [p.number for p in pairs] == [2, 3]
    # The counter's state was undone too, so each run counts the same: only latency differs.
    assert [p.changed for p in pairs] == [(), ()]
    assert [p.differs for p in pairs] == [False, False]


def test_a_step_only_one_run_has_is_flagged_on_every_field() -> None:
    agent, task_id = _counter()
    agent.run_until(task_id, max_steps=3)
    agent.undo_step(task_id, steps=2)
    agent.run_step(task_id)
    state = agent.get_task_state(task_id)

    old, new = default_pair(task_branches(state)) or (None, None)
    assert old is not None and new is not None
    pairs = pair_steps(state, old, new)

    assert [(p.number, p.old is None, p.new is None) for p in pairs] == [
        (2, False, False),
        (3, False, True),
    ]
    assert pairs[1].changed == COMPARED_FIELDS


def test_nothing_to_compare_until_a_rerun_and_an_undone_feedback_is_no_run() -> None:
    agent, task_id = _counter()
    agent.run_until(task_id, max_steps=2)
    agent.add_feedback(task_id, "Go on.")
    agent.undo_step(task_id)  # The feedback (step 3): it starts no branch of its own.
    agent.run_step(task_id)  # Step 3 again, on the same branch.
    state = agent.get_task_state(task_id)

    (run,) = task_branches(state)
    assert run.steps == tuple(state.completed)
    assert default_pair([run]) is None

    agent.undo_step(task_id)  # Undone, not yet run again: still one run.
    assert len(task_branches(agent.get_task_state(task_id))) == 1
    agent.run_step(task_id)
    state = agent.get_task_state(task_id)

    old, new = default_pair(task_branches(state)) or (None, None)
    assert old is not None and new is not None
    # The undone feedback is not part of the first run: step 3 of it is the counting step.
    assert [state.steps[s].kind for s in old.steps] == [StepKind.CUSTOM] * 3
    assert [p.number for p in pair_steps(state, old, new)] == [3]


def _compare_app(replies: list[str]) -> None:

    from agent_core import AgentRunner
    from agent_core.llms import ScriptedLLM
    from agent_core.workers import ReActAgentWorker
    from stepwise.app.components.branch_compare import render_branch_compare

    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=ScriptedLLM(replies)))
    task_id = agent.create_task("Say something.").task_id
    agent.run_step(task_id)
    agent.undo_step(task_id)
    agent.run_step(task_id)
    render_branch_compare(agent.get_task_state(task_id))


def test_the_comparison_shows_model_text_as_text_side_by_side() -> None:
    replies = [_answer(HOSTILE), _answer("plain")]
    app = AppTest.from_function(_compare_app, args=(replies,), default_timeout=30).run()
    assert not app.exception, [e.value for e in app.exception]

    (row,) = app.expander
    assert row.label == "Step 1 · llm · differs: output, tokens"
    codes = [c.value for c in app.code]
    assert HOSTILE in codes and "plain" in codes
    assert codes.index(HOSTILE) < codes.index("plain")  # Undone run on the left.
    shown_as_markdown = [m.value for m in (*app.markdown, *app.caption)]
    assert not any("onerror" in text or "**bold**" in text for text in shown_as_markdown)
    assert ":orange[**Output · differs**]" in shown_as_markdown
    assert ":orange[**Usage (tokens) · differs**]" in shown_as_markdown
    assert "Input" in shown_as_markdown  # Not edited on either side: one input row, not flagged.
    assert "Input as proposed" not in shown_as_markdown


def test_the_current_run_is_compared_with_the_run_it_diverged_from_by_default() -> None:
    agent, task_id = _counter()
    agent.run_until(task_id, max_steps=3)
    agent.undo_step(task_id, steps=2)
    agent.run_until(task_id, max_steps=2)  # Run 2: step 1, then its own steps 2 and 3.
    agent.undo_step(task_id)
    agent.run_step(task_id)  # Run 3: steps 1 and 2 of run 2, then its own step 3.
    first, second, third = task_branches(agent.get_task_state(task_id))

    # Run 3 shares 2 steps with run 2 and 1 with run 1: it diverged from run 2.
    assert default_runs([first, second, third]) == [second, third]
    assert default_runs([first, third]) == [first, third]
    assert default_runs([first]) == [first]


def _runs_app(replies: list[str]) -> None:

    import streamlit as st

    from agent_core import AgentRunner
    from agent_core.llms import ScriptedLLM
    from agent_core.workers import ReActAgentWorker
    from stepwise.app.components.branch_compare import render_branch_compare, task_branches

    if "agent" not in st.session_state:  # One task across reruns: its branch ids stay.
        agent = AgentRunner(ReActAgentWorker.from_tools([], llm=ScriptedLLM(replies)))
        task_id = agent.create_task("Say something.").task_id
        for _ in replies[1:]:  # Each reply a run of its own: run step 1, undo it, run again.
            agent.run_step(task_id)
            agent.undo_step(task_id)
        agent.run_step(task_id)
        st.session_state["agent"] = (agent, task_id)
    agent, task_id = st.session_state["agent"]
    state = agent.get_task_state(task_id)
    st.session_state["runs"] = [b.branch_id for b in task_branches(state)]
    render_branch_compare(state, sent=agent.get_messages_sent)


def test_the_first_difference_and_each_runs_totals_show_for_two_runs_or_more() -> None:
    replies = [_answer("first"), _answer(HOSTILE), _answer("third")]
    app = AppTest.from_function(_runs_app, args=(replies,), default_timeout=30).run()
    assert not app.exception, [e.value for e in app.exception]

    (runs,) = app.multiselect
    assert [runs.format_func(r).split(" (")[0] for r in runs.value] == ["Run 2", "Run 3"]
    (totals,) = app.dataframe
    assert list(totals.value["Run"]) == [runs.format_func(r) for r in runs.value]
    assert list(totals.value.columns) == ["Run", "Steps", "Tokens", "Cost", "Time (ms)"]
    assert all(totals.value["Tokens"] > 0)
    captions = [c.value for c in app.caption]
    assert "The 2 runs share 0 steps at the start." in captions
    assert "First difference, at step 1: the reply" in captions
    (diff,) = [c.value for c in app.code if c.language == "diff"]
    assert f"-{HOSTILE}" in diff and "+third" in diff
    assert "reply: Run 2" in diff and "task " not in diff  # Runs named as the page names them.
    shown_as_markdown = [m.value for m in (*app.markdown, *app.caption)]
    assert not any("onerror" in text for text in shown_as_markdown)

    runs.set_value(app.session_state["runs"]).run()  # All three runs: each against run 1.
    assert not app.exception, [e.value for e in app.exception]
    assert len(app.dataframe[0].value) == 3
    against = [t.value for t in app.text if "against" in t.value]
    assert [t.split("against ")[1].split(" (")[0] for t in against] == ["Run 2", "Run 3"]
    diffs = [c.value for c in app.code if c.language == "diff"]
    assert len(diffs) == 2 and "+third" in diffs[1]

    app.multiselect[0].set_value(app.session_state["runs"][:1]).run()
    assert "Pick two runs or more." in [c.value for c in app.caption]
